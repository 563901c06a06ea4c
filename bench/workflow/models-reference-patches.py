#!/usr/bin/env python3
"""
Runs the reference (ComfyUI's own modules, commit a125cd84) on the tiny fixture
checkpoint with conditioning areas, strengths, masks and timestep ranges, a
LoRA (kohya, LoCon, LoCon with Tucker mid, diffusers, PEFT) and a textual
inversion, and writes what it computed as JSON for
services/workflow/test/models-patches.test.ts. Run by hand through
models-reference-patches.ts (which writes the files into WORK_DIR):

  python3 models-reference-patches.py COMFY_DIR WORK_DIR OUT.json
"""
import json
import sys
comfy_dir, work, out_path = sys.argv[1:4]
import os
ckpt = os.path.join(work, "tiny.safetensors")
from reference_env import open_reference, pattern, summary  # noqa: E402

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

# --- UNet
unet_config = comfy.model_detection.detect_unet_config(sd, "model.diffusion_model.")
model_config = comfy.supported_models.SD15(unet_config)
model = model_config.get_model(sd, "model.diffusion_model.")
model.load_model_weights(sd, "model.diffusion_model.")
patcher = comfy.model_patcher.ModelPatcher(model, load_device=torch.device("cpu"), offload_device=torch.device("cpu"))

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
import comfy.lora  # noqa: E402
import comfy.sd1_clip as sd1  # noqa: E402

tokenizer = sd1.SDTokenizer(embedding_directory=[os.path.join(work, "embeddings")], embedding_size=hidden)


def encode(text, model=None):
    m = model or clip
    cond, _ = m.encode_token_weights(tokenizer.tokenize_with_weights(text))
    return cond

A = encode("a photo of a cat")
B = encode("a red dog")
N = encode("")
latent = torch.zeros((1, 4, 8, 8))


def run(pos, neg, seed, steps=5, cfg=6.0, p=patcher):
    noise = comfy.sample.prepare_noise(latent, seed)
    return comfy.sample.sample(p, noise, steps, cfg, "euler", "normal", pos, neg, latent, denoise=1.0, disable_pbar=True, seed=seed)

ramp = ((torch.arange(16 * 16) % 16).float() / 15.0).reshape((1, 16, 16))
box = torch.zeros((1, 16, 16))
box[0, 4:12, 8:16] = 1.0
cases = {
    "area": ([[A, {}], [B, {"area": (4, 4, 2, 4), "strength": 0.8, "set_area_to_bounds": False}]], [[N, {}]]),
    "percentage": ([[A, {}], [B, {"area": ("percentage", 0.5, 0.25, 0.25, 0.5), "strength": 1.5, "set_area_to_bounds": False}]], [[N, {}]]),
    "mask": ([[A, {}], [B, {"mask": ramp, "mask_strength": 0.7, "set_area_to_bounds": False}]], [[N, {}]]),
    "mask_bounds": ([[A, {}], [B, {"mask": box, "mask_strength": 1.0, "set_area_to_bounds": True}]], [[N, {}]]),
    "timestep": ([[A, {"start_percent": 0.0, "end_percent": 0.5}], [B, {"start_percent": 0.5, "end_percent": 1.0}]], [[N, {}]]),
    "negative_area": ([[A, {}]], [[N, {}], [B, {"area": (3, 5, 4, 0), "strength": 1.0, "set_area_to_bounds": False}]]),
    "strength": ([[A, {"strength": 0.6}], [B, {}]], [[N, {}]]),
}
out["cond"] = {}
for i, (name, (pos, neg)) in enumerate(cases.items()):
    out["cond"][name] = summary(run(pos, neg, 50 + i), 256)

# --- LoRA (LoraLoader: strength_model 0.8, strength_clip 1.3)
lora_sd = load_file(os.path.join(work, "lora.safetensors"))
clip_full = sd1.SD1ClipModel(clip_model=sd1.SDClipModel, textmodel_json_config=clip_config)
clip_full.clip_l.transformer.load_state_dict(text_sd, strict=False)
key_map = comfy.lora.model_lora_keys_unet(model, {})
key_map = comfy.lora.model_lora_keys_clip(clip_full, key_map)
loaded = comfy.lora.load_lora(lora_sd, key_map)
out["lora_keys"] = sorted(loaded.keys())
m2 = patcher.clone()
m2.add_patches(loaded, 0.8)
clip_patcher = comfy.model_patcher.ModelPatcher(clip_full, load_device=torch.device("cpu"), offload_device=torch.device("cpu"))
clip_patcher.add_patches(loaded, 1.3)
clip_patcher.patch_model()
Al = encode("a photo of a cat", clip_full.clip_l)
Nl = encode("", clip_full.clip_l)
out["lora_cond"] = summary(Al, 256)
out["lora_sample"] = summary(run([[Al, {}]], [[Nl, {}]], 60, p=m2), 256)
clip_patcher.unpatch_model()
# Model only (LoraLoaderModelOnly, strength -0.5), plain text encoder.
m3 = patcher.clone()
m3.add_patches(comfy.lora.load_lora(lora_sd, comfy.lora.model_lora_keys_unet(model, {}), log_missing=False), -0.5)
out["lora_model_only"] = summary(run([[A, {}]], [[N, {}]], 61, p=m3), 256)

# --- textual inversion
out["embedding"] = {}
for p in ["a embedding:tiny_emb cat", "(embedding:tiny_emb:1.2) dog, embedding:tiny_emb.safetensors"]:
    out["embedding"][p] = {"tokens": [[t if isinstance(t, int) else -1 for t, _ in c] for c in tokenizer.tokenize_with_weights(p)], "cond": summary(encode(p), 512)}

# --- TAESD through VAELoader.load_taesd's state dict and comfy.sd.VAE (vae_scale 0.18215, shift 0)
taesd_sd = {}
for part in ["encoder", "decoder"]:
    for k, v in load_file(os.path.join(work, "taesd_{}.safetensors".format(part))).items():
        taesd_sd["taesd_{}.{}".format(part, k)] = v
taesd_sd["vae_scale"] = torch.tensor(0.18215)
taesd_sd["vae_shift"] = torch.tensor(0.0)
tvae = comfy.sd.VAE(sd=taesd_sd)
tz = pattern((1, 4, 3, 4), 3.0)
timg = tvae.decode(tz)
out["taesd_decode"] = summary(timg, 128)
out["taesd_encode"] = summary(tvae.encode(timg), 48)

with open(out_path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("wrote", out_path)
