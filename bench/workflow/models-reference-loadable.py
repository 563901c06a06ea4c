#!/usr/bin/env python3
"""
The reference's default workflow (CheckpointLoaderSimple → CLIPTextEncode ×2 → EmptyLatentImage → KSampler →
VAEDecode → SaveImage) through the reference's own nodes (ComfyUI a125cd84), with nothing stood in for, on the
smallest checkpoint its own CheckpointLoaderSimple detects as SD1.5 (models.md §3; services/workflow/test/
models-fixture.ts SD15_LOADABLE, written by bench/workflow/models-reference-loadable.ts): SaveImage's bytes of the
128×128 image and the model class the reference's detection chose, into
services/workflow/test/fixtures/models-reference-loadable.json. Run by hand, not in CI:

  REF_PYTHON=<venv>/bin/python COMFY_DIR=<ComfyUI> npx tsx bench/workflow/models-reference-loadable.ts
"""
import base64
import json
import sys

comfy_dir, models_dir, name, out_path = sys.argv[1:5]
from reference_env import open_reference  # noqa: E402

torch = open_reference(comfy_dir)
import numpy as np  # noqa: E402
import folder_paths  # noqa: E402
import nodes  # noqa: E402

folder_paths.add_model_folder_path("checkpoints", models_dir, is_default=True)
W = H = 128
SEED, STEPS, CFG = 156680208700286, 4, 8.0
with torch.inference_mode():
    model, clip, vae = nodes.CheckpointLoaderSimple().load_checkpoint(name)[:3]
    positive = nodes.CLIPTextEncode().encode(clip, "beautiful scenery nature glass bottle landscape, , purple galaxy bottle,")[0]
    negative = nodes.CLIPTextEncode().encode(clip, "text, watermark")[0]
    latent = nodes.EmptyLatentImage().generate(W, H, 1)[0]
    samples = nodes.KSampler().sample(model, SEED, STEPS, CFG, "euler", "normal", positive, negative, latent, denoise=1.0)[0]
    images = nodes.VAEDecode().decode(vae, samples)[0]
px = np.clip(255.0 * images[0].cpu().numpy(), 0, 255).astype(np.uint8)
out = {
    "model_class": type(model.model.model_config).__name__,
    "parameters": sum(t.numel() for t in model.model.state_dict().values()),
    "seed": SEED, "steps": STEPS, "cfg": CFG, "width": W, "height": H,
    "shape": list(px.shape),
    "bytes": base64.b64encode(px.tobytes()).decode(),
}
json.dump(out, open(out_path, "w"), indent=1)
print(out["model_class"], out["shape"], file=sys.stderr)
