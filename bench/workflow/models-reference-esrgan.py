"""Reference values for the ESRGAN upscale test (services/workflow/test/models-upscale.test.ts).

Runs the published RRDBNet forward pass (as spandrel's ESRGAN architecture computes it, its output clamped to
[0, 1] as spandrel's model descriptor does) in torch over the tiny checkpoint the test writes (growth 4, which
spandrel's loader itself would not read: it assumes 32), through the reference's own comfy.utils.tiled_scale with
ImageUpscaleWithModel's tile 512 / overlap 32, then torch.clamp and SaveImage's 255*v truncation.

  <refvenv>/bin/python bench/workflow/models-reference-esrgan.py <ComfyUI checkout> <model.safetensors> <width> <height>
Prints JSON: {"sum": …, "samples": [[x, y, [r, g, b]], …]}.
"""
import json, sys
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

sys.path.insert(0, sys.argv[1])
import comfy.utils  # noqa: E402

sd = load_file(sys.argv[2])
W, H = int(sys.argv[3]), int(sys.argv[4])
nb = 0
while f"body.{nb}.rdb1.conv1.weight" in sd:
    nb += 1


def conv(x, k):
    return F.conv2d(x, sd[k + ".weight"], sd[k + ".bias"], padding=1)


def lrelu(x):
    return F.leaky_relu(x, 0.2)


def rdb(x, p):
    feats = [x]
    for i in range(1, 5):
        feats.append(lrelu(conv(torch.cat(feats, 1), f"{p}.conv{i}")))
    return conv(torch.cat(feats, 1), f"{p}.conv5") * 0.2 + x


def net(x):
    feat = conv(x, "conv_first")
    h = feat
    for b in range(nb):
        t = h
        for r in (1, 2, 3):
            t = rdb(t, f"body.{b}.rdb{r}")
        h = t * 0.2 + h
    h = feat + conv(h, "conv_body")
    for up in ("conv_up1", "conv_up2"):
        h = lrelu(conv(F.interpolate(h, scale_factor=2, mode="nearest"), up))
    return conv(lrelu(conv(h, "conv_hr")), "conv_last")


def pattern(x, y, c):
    return (x * 37 + y * 11 + c * 71 + ((x * y) % 13) * 5) % 256


img = torch.tensor([[[pattern(x, y, c) for c in range(3)] for x in range(W)] for y in range(H)], dtype=torch.float32) / 255.0
with torch.no_grad():
    # spandrel's ImageModelDescriptor clamps each tile's output to [0, 1] before tiled_scale blends it.
    s = comfy.utils.tiled_scale(img[None].movedim(-1, -3), lambda a: torch.clamp(net(a), 0, 1), tile_x=512, tile_y=512, overlap=32, upscale_amount=4)
s = torch.clamp(s.movedim(-3, -1), min=0, max=1.0)[0]
b = (255.0 * s).numpy().astype("uint8")  # SaveImage: np.clip(255 * i, 0, 255).astype(uint8) truncates
pts = [(0, 0), (1, 0), (5, 3), (W * 4 - 1, H * 4 - 1), (1919, 10), (1950, 40), (1985, 50), (2000, 20), (2047, 7), (2048, 90), (2100, 33), (W * 2, H * 2)]
print(json.dumps({"sum": int(b.astype("int64").sum()), "samples": [[x, y, b[y, x].tolist()] for x, y in pts if x < W * 4 and y < H * 4]}))
