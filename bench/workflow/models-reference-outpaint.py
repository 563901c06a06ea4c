#!/usr/bin/env python3
"""
Runs the reference's outpainting chain on the tiny generated checkpoint's VAE and writes what it computed as JSON for
services/workflow/test/models-outpaint.test.ts: ImagePadForOutpaint (nodes.py; grey 0.5 around the image, a mask of
ones there and a quadratic feather inside) into VAEEncodeForInpaint (grow_mask_by) and into InpaintModelConditioning
(its concat_latent_image, concat_mask and latent). Run by hand through models-reference-outpaint.ts:

  python3 models-reference-outpaint.py COMFY_DIR CKPT OUT.json

The service's IMAGE is 8-bit: the padded grey 0.5 reaches the next node as 128/255. VAEEncodeForInpaint greys every
pixel under the rounded mask itself, so its chain is the same either way; InpaintModelConditioning encodes the padded
image as it is, so its latent is also given for the padded image rounded to bytes ("latent_bytes"), what the
reference computes when it is handed the service's image.
"""
import json
import sys

comfy_dir, ckpt, out_path = sys.argv[1:4]
from reference_env import open_reference, sd_vae, summary  # noqa: E402

torch = open_reference(comfy_dir)
from safetensors.torch import load_file  # noqa: E402
import nodes  # noqa: E402

vae = sd_vae(load_file(ckpt))


def image(w, h, k):
    """Frame k: bytes (37 x + 11 y + 71 c + 5 ((x y) mod 13) + 53 k) mod 256, as LoadImage gives them (float32 / 255)."""
    y, x, c = torch.meshgrid(torch.arange(h), torch.arange(w), torch.arange(3), indexing="ij")
    return ((37 * x + 11 * y + 71 * c + 5 * ((x * y) % 13) + 53 * k) % 256).float() / 255.0


# The outpaint settings of services/workflow/test/models-outpaint.test.ts (OUTPAINT_CASES).
CASES = [
    {"name": "feathered", "width": 45, "height": 37, "batch": 2, "left": 16, "top": 8, "right": 0, "bottom": 24, "feathering": 12, "grow": 6},
    {"name": "plain", "width": 40, "height": 32, "batch": 1, "left": 0, "top": 0, "right": 32, "bottom": 0, "feathering": 40, "grow": 0},
    {"name": "all-sides", "width": 24, "height": 24, "batch": 1, "left": 8, "top": 8, "right": 8, "bottom": 16, "feathering": 5, "grow": 3},
]
cond = [[torch.zeros((1, 2, 8)), {}]]
out = {}
# The reference's executor runs every node under torch.inference_mode().
with torch.inference_mode():
    for case in CASES:
        img = torch.stack([image(case["width"], case["height"], k) for k in range(case["batch"])])
        padded, mask = nodes.ImagePadForOutpaint().expand_image(img, case["left"], case["top"], case["right"], case["bottom"], case["feathering"])
        r = {"image": summary(padded, 96), "image_bytes_sum": int(torch.round(padded * 255).sum()), "mask": summary(mask, 4096)}
        lat = nodes.VAEEncodeForInpaint().encode(vae, padded, mask, case["grow"])[0]
        r["vae_encode_for_inpaint"] = {"samples": summary(lat["samples"], 96), "noise_mask": summary(lat["noise_mask"], 2048)}
        pos, neg, ilat = nodes.InpaintModelConditioning().encode(cond, cond, padded, vae, mask, True)
        r["inpaint_model_conditioning"] = {
            "concat_latent_image": summary(pos[0][1]["concat_latent_image"], 96),
            "concat_mask_is_noise_mask": bool(torch.equal(pos[0][1]["concat_mask"], ilat["noise_mask"])),
            "same_on_negative": bool(torch.equal(neg[0][1]["concat_latent_image"], pos[0][1]["concat_latent_image"])),
            "latent": summary(ilat["samples"], 96),
            "noise_mask": summary(ilat["noise_mask"], 2048),
            "latent_bytes": summary(vae.encode(torch.round(padded * 255) / 255), 96),
        }
        out[case["name"]] = r
        print(case["name"], list(padded.shape), list(lat["samples"].shape), flush=True)
with open(out_path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("wrote", out_path)
