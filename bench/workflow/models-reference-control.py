#!/usr/bin/env python3
"""
Runs the reference (ComfyUI's own modules, commit a125cd84) on a generated
checkpoint with generated ControlNets and a T2I adapter, and writes what it
computed as JSON, for services/workflow/test/models-control.test.ts. Run by
hand, not in CI (needs torch and a ComfyUI source tree):

  REF_PYTHON=<venv>/bin/python COMFY_DIR=<ComfyUI> npx tsx bench/workflow/models-reference-control.ts

The model is built as models-reference.py builds it (the reference only
recognises SD1.5 at full width). The ControlNets go through the reference's
own loader (comfy.controlnet.load_controlnet), with its model detection
answering SD15 for these widths too; the conditioning through its nodes
(ControlNetApplyAdvanced, ControlNetApply); sampling through comfy.sample.sample.
"""
import base64
import json
import os
import sys
comfy_dir, base_path, cn_path, bare_path, diff_path, t2i_path, xl_path, xl_cn_path, tiny_path, tiny_cn_path, example_path, example_image, out_path = sys.argv[1:14]
from reference_env import load_family, load_sd1, open_reference, pattern, summary  # noqa: E402

torch = open_reference(comfy_dir)
from safetensors.torch import load_file  # noqa: E402
import comfy.controlnet  # noqa: E402
import comfy.model_detection  # noqa: E402
import comfy.model_patcher  # noqa: E402
import comfy.sample  # noqa: E402
import comfy.supported_models  # noqa: E402
import nodes  # noqa: E402

PREFIX = "model.diffusion_model."
_detect = comfy.model_detection.model_config_from_unet


def model_config_from_unet(state_dict, unet_key_prefix, use_base_if_no_match=False, metadata=None):
    """The reference's, answering SD15 (SDXL with an adm input) for the fixtures' widths as it does at full width."""
    found = _detect(state_dict, unet_key_prefix, False, metadata=metadata)
    if found:
        return found
    config = comfy.model_detection.detect_unet_config(state_dict, unet_key_prefix)
    return (comfy.supported_models.SDXL if config.get("adm_in_channels") else comfy.supported_models.SD15)(config)


comfy.model_detection.model_config_from_unet = model_config_from_unet

patcher, encode, vae = load_sd1(base_path)


def hint_bytes(w, h, k):
    """An RGB image both sides build: byte (x·k + y·3k + c·50 + x·y) mod 256."""
    return bytes([(x * k + y * 3 * k + c * 50 + x * y) % 256 for y in range(h) for x in range(w) for c in range(3)])


def image(w, h, k):
    return torch.tensor(list(hint_bytes(w, h, k)), dtype=torch.float32).reshape((1, h, w, 3)) / 255.0


def run(pos, neg, seed, steps=4, cfg=6.0, sampler="euler", scheduler="normal", latent=None, on=None):
    m, v = on or (patcher, vae)
    latent = torch.zeros((1, 4, 8, 8)) if latent is None else latent
    noise = comfy.sample.prepare_noise(latent, seed)
    lat = comfy.sample.sample(m, noise, steps, cfg, sampler, scheduler, pos, neg, latent, denoise=1.0, disable_pbar=True, seed=seed)
    img = v.decode(lat)
    return {"latent": summary(lat, 96), "bytes": base64.b64encode((255.0 * img.cpu().numpy()).clip(0, 255).astype("uint8").tobytes()).decode()}


out = {}
pos = encode("a house, (garden:1.2)")
neg = encode("blurry")
cn = comfy.controlnet.load_controlnet(cn_path)
bare = comfy.controlnet.load_controlnet(bare_path)
diff = comfy.controlnet.load_controlnet(diff_path, model=patcher)
t2i = comfy.controlnet.load_controlnet(t2i_path)
advanced = nodes.ControlNetApplyAdvanced()
old = nodes.ControlNetApply()

# --- the ControlNet's own outputs (cldm.ControlNet.forward) on a pattern input and a 64×64 hint
x = pattern((2, 4, 8, 8))
hint = image(64, 64, 5).movedim(-1, 1)
ctx = pos[0][0].repeat(2, 1, 1)
t = torch.tensor([700.0, 700.0])
with torch.inference_mode():
    o = cn.control_model(x=x, hint=hint, timesteps=t, context=ctx)
    out["forward"] = {"output": [summary(v, 32) for v in o["output"]], "middle": summary(o["middle"][0], 32)}
    f = t2i.t2i_model(image(64, 64, 5).movedim(-1, 1))
    out["t2i_forward"] = {"input": [None if v is None else summary(v, 32) for v in f["input"]]}

    # --- sampling, KSampler's path: hints of other sizes are scaled (nearest-exact, centre crop) to the latent's 64×64.
    p, n = advanced.apply_controlnet(pos, neg, cn, image(90, 50, 7), 0.8, 0.1, 0.9)
    out["advanced"] = run(p, n, 31)
    p, n = advanced.apply_controlnet(pos, neg, bare, image(64, 64, 3), 1.3, 0.0, 1.0)
    out["bare"] = run(p, n, 32, sampler="euler_ancestral", scheduler="karras")
    # Deprecated ControlNetApply: the positive only; the negative takes it (control_apply_to_uncond).
    (p,) = old.apply_controlnet(pos, cn, image(48, 80, 11), 0.9)
    out["old"] = run(p, neg, 33)
    # Stacked: a ControlNet on both, then a T2I adapter on the positive (the negative keeps its own).
    p, n = advanced.apply_controlnet(pos, neg, cn, image(64, 64, 5), 0.7, 0.0, 1.0)
    (p,) = old.apply_controlnet(p, t2i, image(70, 70, 9), 0.6)
    out["stacked"] = run(p, n, 34)
    p, n = advanced.apply_controlnet(pos, neg, t2i, image(64, 64, 13), 1.1, 0.0, 0.5)
    out["t2i"] = run(p, n, 35, sampler="dpmpp_2m", scheduler="karras", steps=5)
    p, n = advanced.apply_controlnet(pos, neg, diff, image(64, 64, 17), 1.0, 0.0, 1.0)
    out["diff"] = run(p, n, 36)
    # Strength 0 leaves the conditioning as it was.
    p, n = advanced.apply_controlnet(pos, neg, cn, image(64, 64, 5), 0.0, 0.0, 1.0)
    out["none"] = run(p, n, 37)

    # --- SDXL: a ControlNet with label_emb (the adm vector y goes to it as to the UNet)
    xl_model, xl_patcher, xl_clip, xl_vae = load_family(xl_path, comfy.supported_models.SDXL)
    xl_cn = comfy.controlnet.load_controlnet(xl_cn_path)
    xpos = nodes.CLIPTextEncode().encode(xl_clip, "a lighthouse at dusk")[0]
    xneg = nodes.CLIPTextEncode().encode(xl_clip, "fog")[0]
    p, n = advanced.apply_controlnet(xpos, xneg, xl_cn, image(64, 48, 19), 0.9, 0.0, 0.8)
    out["sdxl"] = run(p, n, 38, cfg=5.0, latent=torch.zeros((1, 4, 6, 8)), on=(xl_patcher, xl_vae))

    # --- the reference's own ControlNet example (ComfyUI_examples controlnet/controlnet_example.png), its graph unchanged,
    # on generated models under its file names: LoadImage → ControlNetApply → KSampler (uni_pc) → VAEDecode with VAELoader's VAE.
    import folder_paths  # noqa: E402
    ex = json.load(open(example_path))
    tiny, tiny_encode, tiny_vae = load_sd1(tiny_path)
    folder_paths.set_input_directory(os.path.dirname(example_image))
    scribble = nodes.LoadImage().load_image(os.path.basename(example_image))[0]
    (p,) = old.apply_controlnet(tiny_encode(ex["6"]["inputs"]["text"]), comfy.controlnet.load_controlnet(tiny_cn_path), scribble, ex["10"]["inputs"]["strength"])
    k = ex["3"]["inputs"]
    size = ex["5"]["inputs"]
    out["example_controlnet"] = run(p, tiny_encode(ex["7"]["inputs"]["text"]), k["seed"], steps=k["steps"], cfg=k["cfg"], sampler=k["sampler_name"], scheduler=k["scheduler"],
                                    latent=torch.zeros((1, 4, size["height"] // 8, size["width"] // 8)), on=(tiny, tiny_vae))

with open(out_path, "w") as fh:
    json.dump(out, fh)
print("wrote", out_path)
