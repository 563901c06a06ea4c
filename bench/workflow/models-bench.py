#!/usr/bin/env python3
"""
The reference's side of bench/workflow/models.ts: loads a generated SD1.x checkpoint the way
CheckpointLoaderSimple does (detect_unet_config + supported_models.SD15 + model_base; comfy.sd.VAE)
and times one CFG UNet evaluation (batch 2) and one VAE decode on the CPU. Prints one JSON line.

  python3 models-bench.py COMFY_DIR CHECKPOINT SIZE EVALS
"""
import json
import resource
import sys
import time
comfy_dir, ckpt, size, evals = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
from reference_env import open_reference  # noqa: E402

torch = open_reference(comfy_dir, threads=None)
from safetensors.torch import load_file  # noqa: E402
import comfy.model_detection  # noqa: E402
import comfy.sd  # noqa: E402
import comfy.supported_models  # noqa: E402

t0 = time.perf_counter()
sd = load_file(ckpt)
unet_config = comfy.model_detection.detect_unet_config(sd, "model.diffusion_model.")
model_config = comfy.supported_models.SD15(unet_config)
model = model_config.get_model(sd, "model.diffusion_model.")
model.load_model_weights(sd, "model.diffusion_model.")
model.diffusion_model.float()
vae_sd = {k[len("first_stage_model."):]: v for k, v in sd.items() if k.startswith("first_stage_model.")}
vae = comfy.sd.VAE(sd=vae_sd)
del sd
load_s = time.perf_counter() - t0

lat = size // 8
x = torch.randn((2, 4, lat, lat))
ctx = torch.randn((2, 77, 768))
t = torch.tensor([500.0, 500.0])
times = []
for _ in range(evals):
    t0 = time.perf_counter()
    model.diffusion_model(x, timesteps=t, context=ctx)
    times.append(time.perf_counter() - t0)
t0 = time.perf_counter()
vae.decode(torch.randn((1, 4, lat, lat)))
decode_s = time.perf_counter() - t0
print(json.dumps({"load_s": load_s, "unet_s": times, "decode_s": decode_s, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "threads": torch.get_num_threads()}))
