"""Reference values for the WebP save test (services/workflow/test/webp-save.test.ts).

Saves images the way the reference's SaveAnimatedWEBP does (PIL's save with save_all, duration, exif, lossless,
quality, method) and prints, for each case, the SHA-256 of every chunk of the file, plus PIL's EXIF bytes for a
prompt and five extra_pnginfo keys. The pixels: a 37x23 RGB frame whose byte i (row-major, RGB interleaved) is
i*7 % 251, and a second frame with i*13 % 241.

  <refvenv>/bin/python bench/workflow/webp-reference.py
"""
import hashlib, io, json
import numpy as np
from PIL import Image

W, H = 37, 23
A = (np.arange(W * H * 3) * 7 % 251).astype(np.uint8).reshape(H, W, 3)
B = (np.arange(W * H * 3) * 13 % 241).astype(np.uint8).reshape(H, W, 3)


def chunks(data):
    at, out = 12, []
    while at < len(data):
        cid = data[at:at + 4].decode('latin1')
        n = int.from_bytes(data[at + 4:at + 8], 'little')
        out.append([cid, hashlib.sha256(data[at + 8:at + 8 + n]).hexdigest()[:16]])
        at += 8 + n + (n & 1)
    return out


def save(frames, lossless, exif_entries):
    img = Image.fromarray(frames[0])
    md = img.getexif()
    for tag, text in exif_entries:
        md[tag] = text
    buf = io.BytesIO()
    img.save(buf, format='WEBP', save_all=True, duration=166, append_images=[Image.fromarray(f) for f in frames[1:]],
             exif=md, lossless=lossless, quality=80, method=4)
    return buf.getvalue()


entries = [(0x0110, 'prompt:' + json.dumps({'a': 1}))]
tag = 0x010F
for key in ['workflow', 'x', 'y', 'z', 'w']:
    entries.append((tag, '{}:{}'.format(key, json.dumps({'k': key}))))
    tag -= 1
md = Image.new('RGB', (1, 1)).getexif()
for t, text in entries:
    md[t] = text
print(json.dumps({
    'lossy': chunks(save([A], False, [])),
    'lossless': chunks(save([A], True, [])),
    'animatedLossless': chunks(save([A, B], True, entries[:1])),
    'exif': md.tobytes().hex(),
}, indent=1))
