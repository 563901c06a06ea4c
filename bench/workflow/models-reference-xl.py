#!/usr/bin/env python3
"""
Runs the reference (ComfyUI's own modules, commit a125cd84) on generated SD2.x,
SDXL and SDXL-refiner checkpoints and writes what it computed as JSON, for
services/workflow/test/models-xl.test.ts. Run by hand, not in CI (needs torch
and a ComfyUI source tree):

  REF_PYTHON=<venv>/bin/python COMFY_DIR=<ComfyUI> npx tsx bench/workflow/models-reference-xl.ts

or directly: python3 models-reference-xl.py COMFY_DIR SD2_EPS SD2_V SDXL REFINER OUT.json

The reference only recognises these families at full width, so the parts are
built the way its checkpoint loader builds them: the UNet config from
comfy.model_detection.detect_unet_config, completed by the family's
supported_models class (SD20, SDXL, SDXLRefiner: which also decide ε or v),
its get_model in a ModelPatcher; the text encoders as comfy.sd.CLIP of the
family's ClipTarget with the checkpoint's widths (model_options' *_model_config)
and the family's process_clip_state_dict; conditioning from the reference's own
nodes (CLIPTextEncode, CLIPSetLastLayer, CLIPTextEncodeSDXL,
CLIPTextEncodeSDXLRefiner), ModelSamplingDiscrete and RescaleCFG patches,
sampling through comfy.sample.sample.
"""
import base64
import json
import sys
comfy_dir, sd2_eps, sd2_v, sdxl_path, refiner_path, sd2_inpaint, out_path = sys.argv[1:8]
from reference_env import flat, load_family, open_reference, pattern, summary  # noqa: E402

torch = open_reference(comfy_dir)
import comfy.model_detection  # noqa: E402
import comfy.model_management  # noqa: E402
import comfy.model_patcher  # noqa: E402
import comfy.sample  # noqa: E402
import comfy.samplers  # noqa: E402
import comfy.supported_models  # noqa: E402
import comfy.supported_models_base  # noqa: E402
import nodes  # noqa: E402
from comfy_extras import nodes_clip_sdxl, nodes_model_advanced  # noqa: E402

PREFIX = "model.diffusion_model."


def encode(clip, text):
    return nodes.CLIPTextEncode().encode(clip, text)[0]


def node_out(o):
    return o.result[0] if hasattr(o, "result") else o[0]


def cond_summary(c):
    return {"cond": summary(c[0][0], 64), "pooled": summary(c[0][1]["pooled_output"], 64)}


def run(patcher, pos, neg, latent, seed, steps=4, cfg=6.0, sampler="euler", scheduler="normal", denoise=1.0):
    noise = comfy.sample.prepare_noise(latent, seed)
    return comfy.sample.sample(patcher, noise, steps, cfg, sampler, scheduler, pos, neg, latent, denoise=denoise, disable_pbar=True, seed=seed)


def image_bytes(vae, lat):
    img = vae.decode(lat)
    return base64.b64encode((255.0 * img.cpu().numpy()).clip(0, 255).astype("uint8").tobytes()).decode()


out = {}
prompts = ["a photo of a cat", "it's (big:1.3) ((red)) cat", ""]
x = pattern((2, 4, 8, 8))
t = torch.tensor([999.0, 500.0])

# --- SD2.x: the ε and the v checkpoint (same layout, the probe bias differs)
sd2 = {}
for key, path in [("eps", sd2_eps), ("v", sd2_v)]:
    model, patcher, clip, vae = load_family(path, comfy.supported_models.SD20)
    r = {"model_type": model.model_type.name}
    if key == "eps":
        r["cond"] = {p: cond_summary(encode(clip, p)) for p in prompts}
        last = nodes.CLIPSetLastLayer().set_last_layer(clip, -1)[0]
        r["cond_layer-1"] = cond_summary(encode(last, "a photo of a cat"))
    pos = encode(clip, "a photo of a cat")
    neg = encode(clip, "")
    ctx = pos[0][0].repeat(2, 1, 1)
    r["unet"] = summary(model.diffusion_model(x, timesteps=t, context=ctx), 256)
    latent = torch.zeros((1, 4, 8, 8))
    r["sample"] = summary(run(patcher, pos, neg, latent, 11), 64)
    if key == "eps":
        # x0 at cfg 1: with a random tiny UNet, x0 output at cfg 6 moves by 0.6 for a 1e-6 change of the conditioning.
        for sampling in ["v_prediction", "lcm", "x0"]:
            m = nodes_model_advanced.ModelSamplingDiscrete().patch(patcher, sampling, False)[0]
            sampler = "lcm" if sampling == "lcm" else "euler"
            r["sample_" + sampling] = summary(run(m, pos, neg, latent, 12, sampler=sampler, scheduler="sgm_uniform" if sampling == "lcm" else "normal", cfg={"lcm": 1.5, "x0": 1.0}.get(sampling, 6.0)), 64)
        mz = nodes_model_advanced.ModelSamplingDiscrete().patch(patcher, "v_prediction", True)[0]
        ms = mz.get_model_object("model_sampling")
        r["zsnr_sigmas"] = {s: flat(comfy.samplers.calculate_sigmas(ms, s, 6)) for s in ["normal", "karras", "simple"]}
        r["sample_vzsnr"] = summary(run(mz, pos, neg, latent, 13), 64)
        ml = nodes_model_advanced.ModelSamplingDiscrete().patch(patcher, "lcm", False)[0]
        r["lcm_sigmas"] = {s: flat(comfy.samplers.calculate_sigmas(ml.get_model_object("model_sampling"), s, 4)) for s in ["normal", "sgm_uniform", "karras"]}
    else:
        rc = nodes_model_advanced.RescaleCFG().patch(patcher, 0.7)[0]
        r["sample_rescale"] = summary(run(rc, pos, neg, latent, 14, cfg=7.0), 64)
        # The patched sampler_cfg_function itself on fixed inputs (as cfg_function calls it).
        fn = rc.model_options["sampler_cfg_function"]
        xo, cp, up = pattern((2, 4, 4, 4), 3.0), pattern((2, 4, 4, 4), 1.0) * 0.5 + 0.1, pattern((2, 4, 4, 4), 2.0).flip(-1)
        for sg in [14.614642, 0.5]:
            sig = torch.tensor([sg, sg])
            r[f"rescale_fn_{sg}"] = summary(xo - fn({"cond": xo - cp, "uncond": xo - up, "cond_scale": 7.0, "input": xo, "sigma": sig, "timestep": sig}), 128)
        # One step: a single guided model call, free of the amplification several steps of a random model add.
        r["sample_rescale_1"] = summary(run(rc, pos, neg, latent, 14, steps=1, cfg=7.0), 64)
        r["sample_1"] = summary(run(patcher, pos, neg, latent, 14, steps=1, cfg=7.0), 64)
        # img2img: denoise 0.6 from a latent.
        r["sample_img2img"] = summary(run(patcher, pos, neg, pattern((1, 4, 8, 8)), 15, steps=5, denoise=0.6), 64)
    if key == "eps":
        # VAEEncodeForInpaint: a 37x45 image (bytes 7919 i mod 256), a 20x24 mask (a diagonal ramp), grow 6, 5 and 0.
        img = (torch.arange(37 * 45 * 3, dtype=torch.int64) * 7919 % 256).float().reshape((1, 37, 45, 3)) / 255.0
        # /41.7: no value lands on a rounding half after the bilinear resize (float32 rounding there would decide).
        m = ((torch.arange(20).reshape(20, 1) + torch.arange(24).reshape(1, 24)).float() / 41.7).reshape((1, 20, 24))
        r["inpaint"] = {}
        for grow in [6, 5, 0]:
            lat = nodes.VAEEncodeForInpaint().encode(vae, img, m, grow)[0]
            r["inpaint"][str(grow)] = {"samples": summary(lat["samples"], 96), "noise_mask": summary(lat["noise_mask"], 2048)}
    sd2[key] = r
out["sd2"] = sd2

# --- SDXL base
model, patcher, clip, vae = load_family(sdxl_path, comfy.supported_models.SDXL)
sdxl = {"model_type": model.model_type.name}
sdxl["cond"] = {p: cond_summary(encode(clip, p)) for p in prompts}
sdxl_node = node_out(nodes_clip_sdxl.CLIPTextEncodeSDXL.execute(clip, 1024, 768, 16, 32, 1024, 1024, "a photo of a cat, " * 20, "a dog"))
sdxl["cond_sdxl"] = cond_summary(sdxl_node)
sdxl["cond_sdxl_opts"] = {k: v for k, v in sdxl_node[0][1].items() if k != "pooled_output"}
sdxl["adm"] = summary(model.encode_adm(pooled_output=sdxl_node[0][1]["pooled_output"], width=1024, height=768, crop_w=16, crop_h=32, target_width=1024, target_height=1024), 2048)
sdxl["adm_default"] = summary(model.encode_adm(pooled_output=sdxl_node[0][1]["pooled_output"], width=64, height=48), 2048)
pos = encode(clip, "a photo of a cat")
neg = encode(clip, "")
y = model.encode_adm(pooled_output=pos[0][1]["pooled_output"], width=64, height=64).repeat(2, 1)
sdxl["unet"] = summary(model.diffusion_model(x, timesteps=t, context=pos[0][0].repeat(2, 1, 1), y=y), 256)
latent = torch.zeros((1, 4, 8, 8))
sdxl["sample"] = summary(run(patcher, pos, neg, latent, 21), 64)
npos = node_out(nodes_clip_sdxl.CLIPTextEncodeSDXL.execute(clip, 512, 512, 0, 0, 512, 512, "a castle", "a castle, oil"))
nneg = node_out(nodes_clip_sdxl.CLIPTextEncodeSDXL.execute(clip, 512, 512, 0, 0, 512, 512, "blurry", "blurry"))
empty = torch.zeros((1, 4, 6, 8))
lat = run(patcher, npos, nneg, empty, 22, steps=5, cfg=7.0, sampler="euler_ancestral", scheduler="karras")
sdxl["workflow"] = {"latent": summary(lat, 96), "bytes": image_bytes(vae, lat)}
out["sdxl"] = sdxl

# --- SDXL refiner
model, patcher, clip, vae = load_family(refiner_path, comfy.supported_models.SDXLRefiner)
ref = {"model_type": model.model_type.name}
rpos = node_out(nodes_clip_sdxl.CLIPTextEncodeSDXLRefiner.execute(clip, 6.0, 1024, 1024, "a castle"))
rneg = node_out(nodes_clip_sdxl.CLIPTextEncodeSDXLRefiner.execute(clip, 2.5, 1024, 1024, "blurry"))
ref["cond"] = cond_summary(rpos)
ref["adm"] = summary(model.encode_adm(pooled_output=rpos[0][1]["pooled_output"], width=1024, height=1024, aesthetic_score=6.0), 2048)
ref["adm_negative_default"] = summary(model.encode_adm(pooled_output=rpos[0][1]["pooled_output"], width=64, height=64, prompt_type="negative"), 2048)
# The refiner's half of a base + refiner run: KSamplerAdvanced steps 3..5 of 5 without added noise, from a latent.
start = pattern((1, 4, 8, 8), 2.0)
ref["sample"] = summary(comfy.sample.sample(patcher, torch.zeros_like(start), 5, 6.0, "euler", "normal", rpos, rneg, start, disable_noise=True, start_step=3, last_step=10000, force_full_denoise=True, disable_pbar=True, seed=31), 64)
plain = encode(clip, "a castle")
ref["sample_plain"] = summary(run(patcher, plain, encode(clip, ""), torch.zeros((1, 4, 8, 8)), 32), 64)
out["refiner"] = ref

# --- SD2 inpainting UNet (9 input channels): InpaintModelConditioning's conds and latent, and no mask at all (ones + blank image)
model, patcher, clip, vae = load_family(sd2_inpaint, comfy.supported_models.SD20)
ip = {"model_type": model.model_type.name, "concat_keys": list(model.concat_keys)}
img = (torch.arange(40 * 48 * 3, dtype=torch.int64) * 7919 % 256).float().reshape((1, 40, 48, 3)) / 255.0
mask = torch.zeros((1, 40, 48))
mask[:, 8:30, 12:40] = 1.0
pos, neg = encode(clip, "a window"), encode(clip, "")
ipos, ineg, ilat = nodes.InpaintModelConditioning().encode(pos, neg, img, vae, mask, True)
ip["concat_latent"] = summary(ipos[0][1]["concat_latent_image"], 64)
ip["latent"] = summary(ilat["samples"], 64)
noise = comfy.sample.prepare_noise(ilat["samples"], 41)
ip["sample"] = summary(comfy.sample.sample(patcher, noise, 3, 5.0, "euler", "normal", ipos, ineg, ilat["samples"], noise_mask=ilat["noise_mask"], disable_pbar=True, seed=41), 64)
ip["sample_nomask"] = summary(run(patcher, pos, neg, torch.zeros((1, 4, 6, 5)), 42, steps=3, cfg=5.0), 64)
out["inpaint"] = ip

with open(out_path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("wrote", out_path)
