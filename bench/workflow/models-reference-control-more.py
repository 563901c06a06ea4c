#!/usr/bin/env python3
"""
Runs the reference (ComfyUI's own modules, commit a125cd84) on generated
union ControlNets, Control-LoRAs and a T2I light adapter, and writes what it
computed as JSON, for services/workflow/test/models-control-more.test.ts.
Run by hand, not in CI (needs torch and a ComfyUI source tree):

  REF_PYTHON=<venv>/bin/python COMFY_DIR=<ComfyUI> npx tsx bench/workflow/models-reference-control-more.ts

Every file goes through the reference's own loader (comfy.controlnet.load_controlnet)
and its nodes (SetUnionControlNetType, ControlNetApplyAdvanced); sampling
through comfy.sample.sample. The reference recognises models and diffusers-layout
ControlNets only at full width: its detection answers SD15/SDXL for the
fixtures' widths (model_config_from_unet), and the union ControlNet's config is
the base model's own (unet_config_from_diffusers_unet), as they would be at full width.
"""
import base64
import json
import sys
comfy_dir, union_base_path, union_path, base_path, lora_path, xl_path, xl_lora_path, light_path, union_xl_path, union_xl_net_path, out_path = sys.argv[1:12]
from reference_env import load_family, load_sd1, open_reference, pattern, summary  # noqa: E402

torch = open_reference(comfy_dir)
import comfy.controlnet  # noqa: E402
import comfy.model_detection  # noqa: E402
import comfy.sample  # noqa: E402
import comfy.supported_models  # noqa: E402
import nodes  # noqa: E402
from comfy_extras.nodes_controlnet import SetUnionControlNetType  # noqa: E402

_detect = comfy.model_detection.model_config_from_unet


def model_config_from_unet(state_dict, unet_key_prefix, use_base_if_no_match=False, metadata=None):
    found = _detect(state_dict, unet_key_prefix, False, metadata=metadata)
    if found:
        return found
    config = comfy.model_detection.detect_unet_config(state_dict, unet_key_prefix)
    return (comfy.supported_models.SDXL if config.get("adm_in_channels") else comfy.supported_models.SD15)(config)


comfy.model_detection.model_config_from_unet = model_config_from_unet


def hint_bytes(w, h, k):
    """An RGB image both sides build: byte (x·k + y·3k + c·50 + x·y) mod 256."""
    return bytes([(x * k + y * 3 * k + c * 50 + x * y) % 256 for y in range(h) for x in range(w) for c in range(3)])


def image(w, h, k):
    return torch.tensor(list(hint_bytes(w, h, k)), dtype=torch.float32).reshape((1, h, w, 3)) / 255.0


def run(model, vae, pos, neg, seed, steps=4, cfg=6.0, sampler="euler", scheduler="normal", latent=None):
    latent = torch.zeros((1, 4, 8, 8)) if latent is None else latent
    noise = comfy.sample.prepare_noise(latent, seed)
    lat = comfy.sample.sample(model, noise, steps, cfg, sampler, scheduler, pos, neg, latent, denoise=1.0, disable_pbar=True, seed=seed)
    img = vae.decode(lat)
    return {"latent": summary(lat, 96), "bytes": base64.b64encode((255.0 * img.cpu().numpy()).clip(0, 255).astype("uint8").tobytes()).decode()}


out = {}
advanced = nodes.ControlNetApplyAdvanced()
set_type = SetUnionControlNetType()

with torch.inference_mode():
    # --- union ControlNet (diffusers layout) for a 320-channel SD1.5-shaped UNet
    upatcher, uencode, uvae = load_sd1(union_base_path)
    # The config a full-width file would be matched to: the model's own.
    base_config = {"cfg": dict(upatcher.model.model_config.unet_config)}
    _from_diffusers = comfy.model_detection.unet_config_from_diffusers_unet
    comfy.model_detection.unet_config_from_diffusers_unet = lambda sd, dtype=None: _from_diffusers(sd, dtype) or dict(base_config["cfg"])
    union = comfy.controlnet.load_controlnet(union_path)
    assert union.control_model.num_control_type == 6
    pos = uencode("a house, (garden:1.2)")
    neg = uencode("blurry")
    x = pattern((2, 4, 8, 8))
    hint = image(64, 64, 5).movedim(-1, 1)
    ctx = pos[0][0].repeat(2, 1, 1)
    t = torch.tensor([700.0, 700.0])
    for name, ctype in [("union_forward_auto", []), ("union_forward_canny", [3])]:
        o = union.control_model(x=x, hint=hint, timesteps=t, context=ctx, control_type=ctype)
        out[name] = {"output": [summary(v, 32) for v in o["output"]], "middle": summary(o["middle"][0], 32)}
    p, n = advanced.apply_controlnet(pos, neg, union, image(90, 50, 7), 0.8, 0.0, 1.0)
    out["union_auto"] = run(upatcher, uvae, p, n, 41)
    (typed,) = set_type.set_controlnet_type(union, "depth")
    p, n = advanced.apply_controlnet(pos, neg, typed, image(64, 64, 5), 0.9, 0.1, 0.9)
    out["union_depth"] = run(upatcher, uvae, p, n, 42)
    (back,) = set_type.set_controlnet_type(typed, "auto")
    p, n = advanced.apply_controlnet(pos, neg, back, image(64, 64, 5), 0.9, 0.1, 0.9)
    out["union_back_to_auto"] = run(upatcher, uvae, p, n, 42)

    # --- an SDXL union ControlNet (ProMax's eight types; label_emb as add_embedding), canny
    uxl_model, uxl_patcher, uxl_clip, uxl_vae = load_family(union_xl_path, comfy.supported_models.SDXL)
    base_config["cfg"] = dict(uxl_patcher.model.model_config.unet_config)
    union_xl = comfy.controlnet.load_controlnet(union_xl_net_path)
    assert union_xl.control_model.num_control_type == 8 and union_xl.control_model.label_emb is not None
    xpos = nodes.CLIPTextEncode().encode(uxl_clip, "a lighthouse at dusk")[0]
    xneg = nodes.CLIPTextEncode().encode(uxl_clip, "fog")[0]
    (typed,) = set_type.set_controlnet_type(union_xl, "canny/lineart/anime_lineart/mlsd")
    p, n = advanced.apply_controlnet(xpos, xneg, typed, image(64, 48, 19), 0.9, 0.0, 0.8)
    out["union_xl_canny"] = run(uxl_patcher, uxl_vae, p, n, 45, cfg=5.0, latent=torch.zeros((1, 4, 6, 8)))

    # --- Control-LoRA on the tiny SD1.5-shaped model: its ControlNet is built from the model at pre_run
    patcher, encode, vae = load_sd1(base_path)
    pos = encode("a house, (garden:1.2)")
    neg = encode("blurry")
    lora = comfy.controlnet.load_controlnet(lora_path)
    assert isinstance(lora, comfy.controlnet.ControlLora)
    lora_fwd = lora.copy()
    lora_fwd.pre_run(patcher.model, patcher.model.model_sampling.percent_to_sigma)
    ctx = pos[0][0].repeat(2, 1, 1)
    o = lora_fwd.control_model(x=x, hint=hint, timesteps=t, context=ctx)
    out["lora_forward"] = {"output": [summary(v, 32) for v in o["output"]], "middle": summary(o["middle"][0], 32)}
    lora_fwd.cleanup()
    p, n = advanced.apply_controlnet(pos, neg, lora, image(90, 50, 7), 0.8, 0.1, 0.9)
    out["lora"] = run(patcher, vae, p, n, 43)

    # --- an SDXL Control-LoRA (label_emb from the model, the adm vector y to it)
    xl_model, xl_patcher, xl_clip, xl_vae = load_family(xl_path, comfy.supported_models.SDXL)
    xl_lora = comfy.controlnet.load_controlnet(xl_lora_path)
    xpos = nodes.CLIPTextEncode().encode(xl_clip, "a lighthouse at dusk")[0]
    xneg = nodes.CLIPTextEncode().encode(xl_clip, "fog")[0]
    p, n = advanced.apply_controlnet(xpos, xneg, xl_lora, image(64, 48, 19), 0.9, 0.0, 0.8)
    out["xl_lora"] = run(xl_patcher, xl_vae, p, n, 44, cfg=5.0, latent=torch.zeros((1, 4, 6, 8)))

    # --- T2I light adapter: its features from a 64×64 hint
    light = comfy.controlnet.load_controlnet(light_path)
    assert isinstance(light.t2i_model, comfy.t2i_adapter.adapter.Adapter_light)
    f = light.t2i_model(image(64, 64, 5).movedim(-1, 1))
    out["light_forward"] = {"input": [None if v is None else summary(v, 32) for v in f["input"]]}

with open(out_path, "w") as fh:
    json.dump(out, fh)
print("wrote", out_path)
