"""Computes the image-kernel fixtures with the reference's own code.

Runs ComfyUI's comfy.utils.common_upscale (torch interpolate; PIL for
lanczos) and the ImageBlur / ImageSharpen node functions of
comfy_extras.nodes_post_processing on small deterministic images, and writes
the inputs and results as bytes (the nearest of 256 levels of each float) for
services/workflow/test/nodes-kernels-reference.test.ts. Called by
image-reference.ts:

    python image-reference.py <ComfyUI dir> <out.json>
"""
import base64
import json
import sys

comfy_dir, out_path = sys.argv[1], sys.argv[2]
sys.argv = [sys.argv[0], "--cpu"]
sys.path.insert(0, comfy_dir)

import comfy.options  # noqa: E402

comfy.options.enable_args_parsing()
import numpy as np  # noqa: E402
import torch  # noqa: E402

import comfy.utils  # noqa: E402
from comfy_extras import nodes_post_processing as npp  # noqa: E402


def source(w, h, c):
    """The test image: a deterministic pattern with edges, gradients and noise-like texture."""
    y, x = np.mgrid[0:h, 0:w]
    chans = [((x * 37 + y * 91 + ch * 53 + ((x * y) % 7) * 13) % 256) for ch in range(3)]
    if c == 4:
        chans.append(np.clip(40 + x * 5 + y * 3, 0, 255))
    return np.stack(chans, axis=-1).astype(np.uint8)


def to_tensor(px):
    return torch.from_numpy(px.astype(np.float32) / 255.0).unsqueeze(0)


def to_bytes(t):
    a = t[0].cpu().numpy()
    return np.clip(np.round(a * 255.0), 0, 255).astype(np.uint8)


def b64(a):
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def first(out):
    return out.result[0] if hasattr(out, "result") else out[0]


cases = []
inputs = {}
for name, (w, h, c) in {"rgb": (40, 34, 3), "rgba": (23, 17, 4)}.items():
    inputs[name] = {"width": w, "height": h, "channels": c, "data": b64(source(w, h, c))}


def add(kind, input_name, params, t):
    px = to_bytes(t)
    cases.append({"kind": kind, "input": input_name, "params": params, "width": px.shape[1], "height": px.shape[0], "data": b64(px)})


for input_name in inputs:
    meta = inputs[input_name]
    img = to_tensor(source(meta["width"], meta["height"], meta["channels"]))
    for method in ["nearest-exact", "bilinear", "area", "bicubic", "lanczos"]:
        for (w, h, crop) in [(61, 47, "disabled"), (13, 9, "disabled"), (29, 29, "center"), (40, 12, "disabled")]:
            # ImageScale.upscale: IMAGE [B,H,W,C] → [B,C,H,W] → common_upscale → back.
            s = comfy.utils.common_upscale(img.movedim(-1, 1), w, h, method, crop).movedim(1, -1)
            add("ImageScale", input_name, {"upscale_method": method, "width": w, "height": h, "crop": crop}, s)
    # PIL skips the pass of a side that keeps its size: lanczos changing only the width, then only the height.
    # and sizes where weights rounded to float32 (instead of PIL's double) moved a sample by a level or more.
    extra = {"rgb": [(48, 50), (16, 9)], "rgba": [(54, 50)]}[input_name]
    for (w, h) in [(meta["width"] + 15, meta["height"]), (meta["width"], meta["height"] + 13), *extra]:
        s = comfy.utils.common_upscale(img.movedim(-1, 1), w, h, "lanczos", "disabled").movedim(1, -1)
        add("ImageScale", input_name, {"upscale_method": "lanczos", "width": w, "height": h, "crop": "disabled"}, s)
    for (r, sigma) in [(1, 1.0), (2, 0.5), (5, 1.0), (9, 2.5), (16, 10.0)]:
        if r >= min(meta["width"], meta["height"]):
            continue
        add("ImageBlur", input_name, {"blur_radius": r, "sigma": sigma}, first(npp.Blur.execute(img, r, sigma)))
    for (r, sigma, alpha) in [(1, 1.0, 1.0), (3, 0.7, 0.3), (7, 2.0, 2.5)]:
        add("ImageSharpen", input_name, {"sharpen_radius": r, "sigma": sigma, "alpha": alpha}, first(npp.Sharpen.execute(img, r, sigma, alpha)))

big = to_tensor(source(40, 34, 3))
# The largest blur radius needs a side above 31 (torch's reflect padding).
add("ImageBlur", "rgb", {"blur_radius": 31, "sigma": 4.0}, first(npp.Blur.execute(big, 31, 4.0)))

with open(out_path, "w") as f:
    json.dump({"reference": "ComfyUI a125cd84, torch " + torch.__version__, "inputs": inputs, "cases": cases}, f, separators=(",", ":"))
print(f"{len(cases)} cases written to {out_path}")
