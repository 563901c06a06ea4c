"""Reference values for the compact and pixel-unshuffled upscale models (services/workflow/test/models-upscale-more.test.ts).

Loads each file with spandrel's ModelLoader (what the reference's UpscaleModelLoader calls) and runs it as the
reference's ImageUpscaleWithModel does: comfy.utils.tiled_scale with tile 512 / overlap 32 and the descriptor's
scale, torch.clamp, then SaveImage's 255·v truncation.

  <refvenv>/bin/python bench/workflow/models-reference-upscale.py <ComfyUI checkout> <spandrel/libs/spandrel> <cases.json> <out.json>
cases.json: [{"name": …, "file": …, "width": W, "height": H}, …]
"""
import json, sys
import torch

sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import comfy.utils  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from reference_env import import_standing_in  # noqa: E402

ModelLoader = import_standing_in("spandrel").ModelLoader


def pattern(x, y, c):
    return (x * 37 + y * 11 + c * 71 + ((x * y) % 13) * 5) % 256


out = {}
for case in json.load(open(sys.argv[3])):
    W, H = case["width"], case["height"]
    model = ModelLoader().load_from_state_dict(load_file(case["file"])).eval()
    img = torch.tensor([[[pattern(x, y, c) for c in range(3)] for x in range(W)] for y in range(H)], dtype=torch.float32) / 255.0
    with torch.no_grad():
        s = comfy.utils.tiled_scale(img[None].movedim(-1, -3), lambda a: model(a), tile_x=512, tile_y=512, overlap=32, upscale_amount=model.scale)
    s = torch.clamp(s.movedim(-3, -1), min=0, max=1.0)[0]
    b = (255.0 * s).numpy().astype("uint8")
    sw, sh = W * model.scale, H * model.scale
    pts = [(0, 0), (1, 0), (5, 3), (sw - 1, sh - 1), (sw // 2, sh // 2), (sw // 3, sh - 2), (sw - 3, 1), (490 * model.scale, 7), (520 * model.scale, sh // 3)]
    out[case["name"]] = {"scale": model.scale, "arch": model.architecture.name, "size": [sw, sh], "sum": int(b.astype("int64").sum()), "samples": [[x, y, b[y, x].tolist()] for x, y in pts if x < sw and y < sh]}
    print(case["name"], model.architecture.name, model.scale, flush=True)
json.dump(out, open(sys.argv[4], "w"), separators=(",", ":"))
