#!/usr/bin/env python3
"""
The reference's side of bench/workflow/models.ts. Prints one JSON line.

  python3 models-bench.py COMFY_DIR CHECKPOINT SIZE EVALS [sd15|sdxl]
  python3 models-bench.py COMFY_DIR --upscale MODEL SIZE SPANDREL_DIR

sd15: loads a generated SD1.x checkpoint the way CheckpointLoaderSimple does (detect_unet_config +
supported_models.SD15 + model_base; comfy.sd.VAE) and times one CFG UNet evaluation (batch 2) and one VAE
decode on the CPU. sdxl: a UNet-only SDXL file as UNETLoader loads it (supported_models.SDXL), the UNet
evaluated with its adm input `y`. --upscale: an upscale model loaded by spandrel's ModelLoader (what
UpscaleModelLoader calls) run over a SIZE×SIZE image as ImageUpscaleWithModel runs it
(comfy.utils.tiled_scale, 512-pixel tiles, overlap 32).
"""
import json
import resource
import sys
import time
# open_reference resets sys.argv for the reference's own argument parser.
argv = sys.argv[1:]
comfy_dir = argv[0]
if argv[1] == "--upscale":
    # Before open_reference, so that spandrel is found instead of stood in for.
    sys.path.insert(0, argv[4])
from reference_env import import_standing_in, open_reference  # noqa: E402

torch = open_reference(comfy_dir, threads=None)
from safetensors.torch import load_file  # noqa: E402


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if argv[1] == "--upscale":
    model_path, size = argv[2], int(argv[3])
    import comfy.utils  # noqa: E402
    ModelLoader = import_standing_in("spandrel").ModelLoader
    t0 = time.perf_counter()
    model = ModelLoader().load_from_state_dict(load_file(model_path)).eval()
    load_s = time.perf_counter() - t0
    img = (torch.arange(3 * size * size) * 37 % 256).float().reshape((1, 3, size, size)) / 255.0
    t0 = time.perf_counter()
    c0 = time.process_time()
    with torch.inference_mode():
        s = comfy.utils.tiled_scale(img, lambda a: model(a), tile_x=512, tile_y=512, overlap=32, upscale_amount=model.scale)
        torch.clamp(s, min=0, max=1.0)
    upscale_s = time.perf_counter() - t0
    upscale_cpu_s = time.process_time() - c0
    print(json.dumps({"load_s": load_s, "upscale_s": upscale_s, "upscale_cpu_s": upscale_cpu_s, "peak_rss_mb": peak_mb(), "threads": torch.get_num_threads()}))
    sys.exit(0)

import comfy.model_detection  # noqa: E402
import comfy.sd  # noqa: E402
import comfy.supported_models  # noqa: E402

ckpt, size, evals = argv[1], int(argv[2]), int(argv[3])
family = argv[4] if len(argv) > 4 else "sd15"
t0 = time.perf_counter()
sd = load_file(ckpt)
unet_config = comfy.model_detection.detect_unet_config(sd, "model.diffusion_model.")
model_config = (comfy.supported_models.SDXL if family == "sdxl" else comfy.supported_models.SD15)(unet_config)
model = model_config.get_model(sd, "model.diffusion_model.")
model.load_model_weights(sd, "model.diffusion_model.")
model.diffusion_model.float()
vae = None
if family != "sdxl":
    vae_sd = {k[len("first_stage_model."):]: v for k, v in sd.items() if k.startswith("first_stage_model.")}
    vae = comfy.sd.VAE(sd=vae_sd)
del sd
load_s = time.perf_counter() - t0

lat = size // 8
x = torch.randn((2, 4, lat, lat))
ctx = torch.randn((2, 77, 2048 if family == "sdxl" else 768))
extra = {"y": torch.randn((2, unet_config["adm_in_channels"]))} if family == "sdxl" else {}
t = torch.tensor([500.0, 500.0])
times = []
with torch.inference_mode():
    for _ in range(evals):
        t0 = time.perf_counter()
        model.diffusion_model(x, timesteps=t, context=ctx, **extra)
        times.append(time.perf_counter() - t0)
    decode_s = None
    if vae is not None:
        t0 = time.perf_counter()
        vae.decode(torch.randn((1, 4, lat, lat)))
        decode_s = time.perf_counter() - t0
print(json.dumps({"load_s": load_s, "unet_s": times, "decode_s": decode_s, "peak_rss_mb": peak_mb(), "threads": torch.get_num_threads()}))
