#!/usr/bin/env python3
"""
Runs the reference (ComfyUI's own modules, commit a125cd84) on a generated
checkpoint and writes what it computed as JSON, for the model tests to compare
against. Run by hand, not in CI (needs torch and a ComfyUI source tree):

  npx tsx bench/workflow/models-reference.ts            # writes the fixture checkpoint, runs this, saves the JSON

or directly: python3 models-reference.py COMFY_DIR CHECKPOINT OUT.json

The reference cannot load a checkpoint this small through
CheckpointLoaderSimple (it only recognises SD1.5 at full width), so its parts
are built the way that loader builds them: the UNet config from
comfy.model_detection.detect_unet_config, completed by supported_models.SD15,
inside comfy.model_base through a ModelPatcher; the text encoder through
sd1_clip.SDClipModel with the checkpoint's widths; the VAE through comfy.sd.VAE
with the checkpoint's ddconfig. Sampling is comfy.sample.sample, the function
KSampler calls, with comfy.sample.prepare_noise.
"""
import json
import sys
comfy_dir, ckpt, out_path = sys.argv[1:4]
from reference_env import flat, open_reference, pattern, sd_vae, summary  # noqa: E402

torch = open_reference(comfy_dir)
from safetensors.torch import load_file  # noqa: E402
import comfy.model_detection  # noqa: E402
import comfy.model_management  # noqa: E402
import comfy.model_patcher  # noqa: E402
import comfy.sample  # noqa: E402
import comfy.samplers  # noqa: E402
import comfy.sd  # noqa: E402
import comfy.sd1_clip  # noqa: E402
import comfy.supported_models  # noqa: E402

sd = load_file(ckpt)
out = {}

# --- noise
out["noise"] = {}
for shape, seed in [((1, 4, 8, 8), 0), ((2, 4, 3, 5), 123456789), ((1, 4, 2, 2), 2**40 + 7), ((1, 4, 9, 7), 42)]:
    out["noise"][f"{seed}:{','.join(map(str, shape))}"] = flat(comfy.sample.prepare_noise(torch.zeros(shape), seed))[:64]

# --- UNet
unet_config = comfy.model_detection.detect_unet_config(sd, "model.diffusion_model.")
model_config = comfy.supported_models.SD15(unet_config)
model = model_config.get_model(sd, "model.diffusion_model.")
model.load_model_weights(sd, "model.diffusion_model.")
patcher = comfy.model_patcher.ModelPatcher(model, load_device=torch.device("cpu"), offload_device=torch.device("cpu"))

# --- schedules
ms = model.model_sampling
out["sigmas"] = {}
for sched in ["simple", "sgm_uniform", "karras", "exponential", "ddim_uniform", "beta", "normal", "linear_quadratic", "kl_optimal"]:
    for steps in [1, 2, 3, 10, 25]:
        if sched == "kl_optimal" and steps == 1:
            continue  # 0/0: NaN, not JSON
        out["sigmas"][f"{sched}:{steps}"] = flat(comfy.samplers.calculate_sigmas(ms, sched, steps))

# --- text encoder
prefix = "cond_stage_model.transformer."
text_sd = {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}
hidden = text_sd["text_model.embeddings.token_embedding.weight"].shape[1]
layers = len({k.split(".")[3] for k in text_sd if k.startswith("text_model.encoder.layers.")})
clip_config = {
    "hidden_act": "quick_gelu", "hidden_size": hidden, "intermediate_size": text_sd["text_model.encoder.layers.0.mlp.fc1.weight"].shape[0],
    "num_attention_heads": hidden // 64 if hidden % 64 == 0 else 1, "num_hidden_layers": layers, "max_position_embeddings": 77,
    "vocab_size": 49408, "layer_norm_eps": 1e-5, "projection_dim": hidden, "eos_token_id": 49407,
}
clip = comfy.sd1_clip.SDClipModel(textmodel_json_config=clip_config)
clip.transformer.load_state_dict(text_sd, strict=False)
import tempfile  # noqa: E402
# CheckpointLoaderSimple always passes the embeddings folder: here an empty one, so embedding: names are missing.
tokenizer = comfy.sd1_clip.SDTokenizer(embedding_directory=[tempfile.mkdtemp()], embedding_size=hidden)
prompts = ["a photo of a cat", "Hello, World! café 東京 🙂", "", "it's (big:1.3) ((red)) \\(x\\) (a (b:0.5) c)", "masterpiece, " * 30,
           "a embedding:missing cat", "embedding:gone, (red embedding:x:1.2) dog\nembedding:last"]
out["tokens"] = {p: [[t for t, _ in chunk] for chunk in tokenizer.tokenize_with_weights(p)] for p in prompts}
out["weights"] = {p: [[w for _, w in chunk] for chunk in tokenizer.tokenize_with_weights(p)] for p in prompts}

def encode(text, layer=-1):
    if layer == -1:
        clip.reset_clip_options()
    else:
        clip.set_clip_options({"layer": layer})
    cond, pooled = clip.encode_token_weights(tokenizer.tokenize_with_weights(text))
    clip.reset_clip_options()
    return cond

out["cond"] = {}
for p in prompts:
    c = encode(p)
    out["cond"][p] = summary(c)
out["cond_layer-2"] = summary(encode("a photo of a cat", -2))

# --- direct UNet call
x = pattern((2, 4, 8, 8))
ctx = encode("a photo of a cat").repeat(2, 1, 1)
t = torch.tensor([999.0, 500.0])
with torch.no_grad():
    eps = model.diffusion_model(x, timesteps=t, context=ctx)
out["unet"] = {"t": [999, 500], "eps": summary(eps, 512)}

# --- sampling (KSampler's path)
positive = [[encode("a photo of a cat"), {}]]
negative = [[encode(""), {}]]
out["sample"] = {}
latent = torch.zeros((1, 4, 8, 8))
cases = [
    ("euler", "normal", 4, 7.0, 1.0, 0), ("euler_ancestral", "karras", 4, 7.0, 1.0, 1), ("heun", "normal", 3, 5.0, 1.0, 2),
    ("dpm_2", "karras", 3, 7.0, 1.0, 3), ("dpm_2_ancestral", "normal", 3, 7.0, 1.0, 4), ("dpmpp_2s_ancestral", "karras", 3, 7.0, 1.0, 5),
    ("dpmpp_2m", "karras", 5, 7.0, 1.0, 6), ("ddpm", "simple", 4, 7.0, 1.0, 7), ("lcm", "sgm_uniform", 4, 1.5, 1.0, 8),
    ("ddim", "ddim_uniform", 4, 7.0, 1.0, 9), ("euler", "exponential", 4, 1.0, 1.0, 10), ("dpmpp_2m", "simple", 6, 7.0, 0.5, 11),
    ("lms", "karras", 6, 7.0, 1.0, 12), ("ipndm", "normal", 6, 7.0, 1.0, 13), ("ipndm_v", "karras", 6, 7.0, 1.0, 14),
    ("gradient_estimation", "simple", 5, 7.0, 1.0, 15),
    ("euler_cfg_pp", "normal", 4, 1.5, 1.0, 16), ("euler_ancestral_cfg_pp", "karras", 4, 1.0, 1.0, 17),
    ("dpmpp_2s_ancestral_cfg_pp", "normal", 3, 1.2, 1.0, 18), ("dpmpp_2m_cfg_pp", "karras", 5, 1.5, 1.0, 19),
    ("gradient_estimation_cfg_pp", "simple", 4, 1.3, 1.0, 20),
]
init = pattern((1, 4, 8, 8))
for sampler, sched, steps, cfg, denoise, seed in cases:
    lat = latent if denoise == 1.0 else init
    noise = comfy.sample.prepare_noise(lat, seed)
    s = comfy.sample.sample(patcher, noise, steps, cfg, sampler, sched, positive, negative, lat, denoise=denoise, disable_pbar=True, seed=seed)
    out["sample"][f"{sampler}:{sched}:{steps}:{cfg}:{denoise}:{seed}"] = summary(s, 64)

# Noise masks (SetLatentNoiseMask): a horizontal ramp at pixel resolution (64×64 over an 8×8 latent), for euler and ddim.
ramp = ((torch.arange(64 * 64) % 64).float() / 63.0).reshape((1, 1, 64, 64))
out["masked"] = {}
for sampler, seed in [("euler", 21), ("ddim", 22), ("euler_ancestral", 23)]:
    noise = comfy.sample.prepare_noise(init, seed)
    s = comfy.sample.sample(patcher, noise, 4, 6.0, sampler, "karras", positive, negative, init, denoise=0.8, noise_mask=ramp, disable_pbar=True, seed=seed)
    out["masked"][sampler] = summary(s, 64)

# KSamplerAdvanced: steps 2..4 of 6, leftover noise kept; then without noise from step 4.
noise = comfy.sample.prepare_noise(latent, 3)
a = comfy.sample.sample(patcher, noise, 6, 6.0, "euler", "normal", positive, negative, latent, start_step=0, last_step=3, force_full_denoise=False, disable_pbar=True, seed=3)
b = comfy.sample.sample(patcher, torch.zeros_like(latent), 6, 6.0, "euler", "normal", positive, negative, a, disable_noise=True, start_step=3, last_step=10000, force_full_denoise=True, disable_pbar=True, seed=3)
out["advanced"] = {"first": summary(a, 64), "second": summary(b, 64)}

# --- VAE
vae = sd_vae(sd)
z = pattern((1, 4, 4, 6), 3.0)
img = vae.decode(z)
out["vae_decode"] = summary(img, 64)
# SaveImage's bytes of that image (base64).
import base64  # noqa: E402
out["vae_decode_bytes"] = base64.b64encode((255.0 * img.cpu().numpy()).clip(0, 255).astype("uint8").tobytes()).decode()
# Encoding the decoded image's bytes (as LoadImage would give them back).
pixels = torch.tensor(list(base64.b64decode(out["vae_decode_bytes"])), dtype=torch.float32).reshape(img.shape) / 255.0
out["vae_encode"] = summary(vae.encode(pixels), 96)
# An image whose sides are not multiples of 8 is cropped about its centre: bytes (7919 i mod 256).
odd = (torch.arange(37 * 45 * 3, dtype=torch.int64) * 7919 % 256).float().reshape((1, 37, 45, 3)) / 255.0
out["vae_encode_odd"] = summary(vae.encode(odd), 80)

# --- the reference's default workflow (CheckpointLoaderSimple → CLIPTextEncode ×2 → EmptyLatentImage → KSampler → VAEDecode →
# SaveImage) at 48×32 with its prompts, seed, steps, cfg, sampler and scheduler: SaveImage's bytes.
pos = [[encode("beautiful scenery nature glass bottle landscape, , purple galaxy bottle,"), {}]]
neg = [[encode("text, watermark"), {}]]
empty = torch.zeros((1, 4, 32 // 8, 48 // 8))
lat = comfy.sample.sample(patcher, comfy.sample.prepare_noise(empty, 156680208700286), 20, 8.0, "euler", "normal", pos, neg, empty, denoise=1.0, disable_pbar=True, seed=156680208700286)
img = vae.decode(lat)
out["default_workflow"] = {"latent": summary(lat, 96), "bytes": base64.b64encode((255.0 * img.cpu().numpy()).clip(0, 255).astype("uint8").tobytes()).decode()}

with open(out_path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("wrote", out_path)
