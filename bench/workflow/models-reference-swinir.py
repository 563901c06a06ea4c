"""Reference values for the SwinIR and HAT upscale test (services/workflow/test/models-upscale-swinir.test.ts).

Loads each generated file with spandrel's ModelLoader (what the reference's UpscaleModelLoader calls, after its own
"module." strip for SwinIR keys) and runs it as the reference's ImageUpscaleWithModel does: comfy.utils.tiled_scale
with tile 512 / overlap 32 and the descriptor's scale (the descriptor pads each tile to its size requirements and
clamps), torch.clamp, then SaveImage's 255·v truncation. Rows of the result are stored whole (every row of the small
images, three rows across the blended tiles of the wide one), base64.

  <refvenv>/bin/python bench/workflow/models-reference-swinir.py <ComfyUI checkout> <spandrel/libs/spandrel> <cases.json> <out.json>
cases.json: [{"name": …, "file": …, "width": W, "height": H}, …]
"""
import base64, json, sys
import torch

sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import comfy.utils  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from reference_env import import_standing_in  # noqa: E402

ModelLoader = import_standing_in("spandrel").ModelLoader
torch.set_num_threads(1)


def pattern(x, y, c):
    return (x * 37 + y * 11 + c * 71 + ((x * y) % 13) * 5) % 256


out = {}
for case in json.load(open(sys.argv[3])):
    W, H = case["width"], case["height"]
    sd = load_file(case["file"])
    if "module.layers.0.residual_group.blocks.0.norm1.weight" in sd:
        sd = comfy.utils.state_dict_prefix_replace(sd, {"module.": ""})
    model = ModelLoader().load_from_state_dict(sd).eval()
    img = torch.tensor([[[pattern(x, y, c) for c in range(3)] for x in range(W)] for y in range(H)], dtype=torch.float32) / 255.0
    with torch.no_grad():
        s = comfy.utils.tiled_scale(img[None].movedim(-1, -3), lambda a: model(a), tile_x=512, tile_y=512, overlap=32, upscale_amount=model.scale)
    s = torch.clamp(s.movedim(-3, -1), min=0, max=1.0)[0]
    b = (255.0 * s).numpy().astype("uint8")
    sw, sh = W * model.scale, H * model.scale
    rows = list(range(sh)) if sw * sh <= 20000 else [0, sh // 2 + 1, sh - 1]
    h = model.model.hyperparameters if hasattr(model.model, "hyperparameters") else {}
    out[case["name"]] = {
        "arch": model.architecture.name, "scale": model.scale, "size": [sw, sh], "sum": int(b.astype("int64").sum()),
        "upsampler": h.get("upsampler"), "img_range": h.get("img_range"), "window": h.get("window_size"), "depths": h.get("depths"),
        "saturated": float(((b == 0) | (b == 255)).mean()),
        "rows": [[y, base64.b64encode(b[y].tobytes()).decode()] for y in rows],
    }
    print(case["name"], model.architecture.name, model.scale, h.get("upsampler"), h.get("img_range"), "saturated", out[case["name"]]["saturated"], flush=True)
json.dump(out, open(sys.argv[4], "w"), separators=(",", ":"))
