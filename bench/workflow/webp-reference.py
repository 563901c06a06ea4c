"""Reference values for the WebP save test (services/workflow/test/webp-save.test.ts).

Saves images the way the reference's SaveAnimatedWEBP does (PIL's save with save_all, duration, exif, lossless,
quality, method) and prints, for each case (quality 80 and method 4 unless the name says otherwise), the SHA-256 of
every chunk of the file, plus PIL's EXIF bytes for a prompt and five extra_pnginfo keys. The pixels: a 37x23 RGB frame whose byte i (row-major, RGB interleaved) is
i*7 % 251, and a second frame with i*13 % 241. `img2webp`: whole-file digests of four 61x43 frames (gradients plus
an LCG's noise, as services/workflow/test/webp-img2webp.test.ts makes them) saved without EXIF.

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


def save(frames, lossless, exif_entries, quality=80, method=4):
    img = Image.fromarray(frames[0])
    md = img.getexif()
    for tag, text in exif_entries:
        md[tag] = text
    buf = io.BytesIO()
    img.save(buf, format='WEBP', save_all=True, duration=166, append_images=[Image.fromarray(f) for f in frames[1:]],
             exif=md, lossless=lossless, quality=quality, method=method)
    return buf.getvalue()


def noisy(shift, w=61, h=43):
    px, seed = bytearray(w * h * 3), 7 + shift
    for i in range(w * h):
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
        n, x, y = (seed >> 16) % 13, i % w, i // w
        px[i * 3:i * 3 + 3] = bytes([(x * 4 + n + shift * 9) & 255, (y * 5 + n) & 255, ((x + y) * 2 + n + shift * 3) & 255])
    return np.frombuffer(bytes(px), np.uint8).reshape(h, w, 3)


def whole(frames, lossless, quality, method):
    buf = io.BytesIO()
    Image.fromarray(frames[0]).save(buf, format='WEBP', save_all=True, duration=166,
                                    append_images=[Image.fromarray(f) for f in frames[1:]],
                                    lossless=lossless, quality=quality, method=method)
    return hashlib.sha256(buf.getvalue()).hexdigest()[:16]


FOUR = [noisy(s) for s in range(4)]
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
    'animatedLossy': chunks(save([A, B], False, entries[:1])),
    'animatedLossyQ0Slowest': chunks(save([A, B, A], False, entries[:1], quality=0, method=6)),
    'animatedLosslessQ0Fastest': chunks(save([A, B, B], True, entries[:1], quality=0, method=0)),
    'lossyQ0': chunks(save([A], False, entries[:1], quality=0)),
    'lossyQ0Fastest': chunks(save([A], False, entries[:1], quality=0, method=0)),
    'lossySlowest': chunks(save([A], False, entries[:1], quality=80, method=6)),
    'img2webp': {'{} q{} m{}'.format('lossless' if ll else 'lossy', q, m): whole(FOUR, ll, q, m)
                 for ll, q, m in [(False, 80, 4), (False, 0, 0), (False, 100, 6), (True, 0, 4)]},
    'exif': md.tobytes().hex(),
}, indent=1))
