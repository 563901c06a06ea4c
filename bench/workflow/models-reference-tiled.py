#!/usr/bin/env python3
"""
Runs the reference's VAEDecodeTiled and VAEEncodeTiled nodes (nodes.py, comfy.sd.VAE.decode_tiled_/encode_tiled_,
comfy.utils.tiled_scale) on the tiny generated checkpoint's VAE and writes what they computed as JSON for
services/workflow/test/models-tiled-vae.test.ts. Run by hand through models-reference-tiled.ts:

  python3 models-reference-tiled.py COMFY_DIR CKPT OUT.json
"""
import json
import sys

comfy_dir, ckpt, out_path = sys.argv[1:4]
from reference_env import open_reference, pattern, sd_vae, summary  # noqa: E402

torch = open_reference(comfy_dir)
from safetensors.torch import load_file  # noqa: E402
import nodes  # noqa: E402

sd = load_file(ckpt)
vae = sd_vae(sd)

out = {"decode": {}, "encode": {}}
# The reference's executor runs every node under torch.inference_mode().
with torch.inference_mode():
    z = pattern((2, 4, 20, 28), 2.0)
    for tile, overlap in [(64, 16), (96, 64), (128, 32), (512, 64)]:
        img = nodes.VAEDecodeTiled().decode(vae, {"samples": z}, tile, overlap, 64, 8)[0]
        out["decode"][f"{tile}:{overlap}"] = summary(img, 96)
    # Pixels in [0, 1]: (sin pattern + 1.5) / 3, 150×226 (not multiples of 8: the encoder crops about the centre first).
    pixels = ((pattern((1, 150, 226, 3), 1.5) + 1.5) / 3.0).clamp(0, 1)
    for tile, overlap in [(64, 0), (128, 32), (192, 64), (512, 64)]:
        lat = nodes.VAEEncodeTiled().encode(vae, pixels, tile, overlap, 64, 8)[0]["samples"]
        out["encode"][f"{tile}:{overlap}"] = summary(lat, 96)
with open(out_path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("wrote", out_path)
