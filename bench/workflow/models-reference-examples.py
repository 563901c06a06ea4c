#!/usr/bin/env python3
"""
Runs the reference's own example workflows (ComfyUI_examples: img2img, inpainting, SDXL base + refiner, ESRGAN
upscale, the latent hires fix; services/workflow/test/fixtures/examples) through the reference's own nodes (ComfyUI commit a125cd84) on
the generated models and input images that bench/workflow/models-reference-examples.ts writes, and saves each
SaveImage's image reduced (sampled pixels and block means, services/workflow/test/models-examples-fixture.ts) as
services/workflow/test/fixtures/models-reference-examples.json. Run by hand, not in CI (needs torch, a ComfyUI
source tree and spandrel):

  REF_PYTHON=<venv>/bin/python COMFY_DIR=<ComfyUI> SPANDREL_DIR=<spandrel>/libs/spandrel npx tsx bench/workflow/models-reference-examples.ts

Each prompt is evaluated node by node as the reference's executor would (inputs from linked outputs, the node
class's FUNCTION, or `execute` for its v3 nodes), unchanged, with three stand-ins: CheckpointLoaderSimple builds
the checkpoint with the family class the file name stands for (reference_env.load_family: the reference's own
detection does not recognise the tiny widths), VAELoader builds the VAE as reference_env.sd_vae does (for the same
reason), and SaveImage hands back its images. Everything else is the
reference's: LoadImage, ImagePadForOutpaint, CLIPSetLastLayer, VAEEncode, VAEEncodeForInpaint, CLIPTextEncode, KSampler,
KSamplerAdvanced (dpmpp_sde with torchsde's Brownian tree: TORCHSDE_DIR), LatentUpscale, VAEDecode, UpscaleModelLoader (comfy.utils.load_torch_file and spandrel on the .pth) and
ImageUpscaleWithModel. The examples in BYTES_TOO are run a second time with every IMAGE a node computes held as
8-bit, as the service holds it (saved under `bytes`).
"""
import base64
import inspect
import json
import os
import sys

# twins.json: the .safetensors twins of the PyTorch files (`sd15`, `anything`, `sd21`, `esrgan`) and FRONTEND_DEFAULTS (`frontend`).
comfy_dir, models_dir, input_dir, twins_path, examples_dir, out_path = sys.argv[1:7]
dump_dir = sys.argv[7] if len(sys.argv) > 7 else None
import reference_env  # noqa: E402
from reference_env import load_family, open_reference  # noqa: E402

# sde: torchsde's Brownian tree for the hires-fix example's dpmpp_sde (TORCHSDE_DIR names its source).
torch = open_reference(comfy_dir, sde=True)
# spandrel's public source (SPANDREL_DIR: its libs/spandrel), which UpscaleModelLoader loads models with, in place of
# open_reference's empty stand-in; what it imports and is not installed is stood in for.
sys.path.insert(0, os.environ["SPANDREL_DIR"])
for k in [m for m in sys.modules if m == "spandrel" or m.startswith("spandrel.")]:
    del sys.modules[k]
reference_env.import_standing_in("spandrel")
import numpy as np  # noqa: E402
import comfy.supported_models  # noqa: E402
import folder_paths  # noqa: E402
import nodes  # noqa: E402
from comfy_extras import nodes_upscale_model  # noqa: E402

twins = json.load(open(twins_path))
SAMPLES = 2048
GRID = 32

# CLIP towers narrower than 64 get one head, as the service and models-reference.py's SD1 text model do.
_text_config = reference_env.text_config


def text_config(sd, prefix, act):
    c = _text_config(sd, prefix, act)
    c["num_attention_heads"] = max(1, c["num_attention_heads"])
    return c


reference_env.text_config = text_config

FAMILIES = {
    "v1-5-pruned-emaonly.ckpt": (comfy.supported_models.SD15, twins["sd15"]),
    "Anything-V3.0.ckpt": (comfy.supported_models.SD15, twins["anything"]),
    "v2-1_768-ema-pruned.ckpt": (comfy.supported_models.SD20, twins["sd21"]),
    "512-inpainting-ema.safetensors": (comfy.supported_models.SD20, None),
    "sd_xl_base_1.0.safetensors": (comfy.supported_models.SDXL, None),
    "sd_xl_refiner_1.0.safetensors": (comfy.supported_models.SDXLRefiner, None),
}
_loaded = {}


def checkpoint_loader(ckpt_name):
    if ckpt_name not in _loaded:
        cls, twin = FAMILIES[ckpt_name]
        # The .ckpt's tensors, read from its .safetensors twin (the same values; load_family reads safetensors).
        _model, patcher, clip, vae = load_family(twin or os.path.join(models_dir, "checkpoints", ckpt_name), cls)
        _loaded[ckpt_name] = (patcher, clip, vae)
    return _loaded[ckpt_name]


folder_paths.set_input_directory(input_dir)
folder_paths.add_model_folder_path("upscale_models", os.path.join(models_dir, "upscale_models"), is_default=True)


def eight_bit(t):
    """An IMAGE as the service holds one between nodes: 8-bit, its bytes as SaveImage's (255·x truncated)."""
    return torch.trunc(255.0 * t).clamp(0, 255) / 255.0


def call(class_type, args, bytes_image):
    if class_type == "CheckpointLoaderSimple":
        return checkpoint_loader(args["ckpt_name"])
    if class_type == "SaveImage":
        return (args["images"],)
    if class_type == "VAELoader":
        # comfy.sd.VAE reads the SD VAE's widths from no key (its ddconfig is the full-size one): built as sd_vae builds it.
        from safetensors.torch import load_file
        return (reference_env.sd_vae(load_file(os.path.join(models_dir, "vae", args["vae_name"])), prefix=""),)
    cls = nodes.NODE_CLASS_MAPPINGS.get(class_type) or getattr(nodes_upscale_model, class_type)
    if not hasattr(cls, "define_schema"):
        fn = getattr(cls(), cls.FUNCTION)
        params = inspect.signature(fn).parameters
        out = fn(**{k: v for k, v in args.items() if k in params})
        if bytes_image:
            out = tuple(eight_bit(v) if t == "IMAGE" else v for v, t in zip(out, cls.RETURN_TYPES))
        return out
    params = inspect.signature(cls.execute).parameters
    return cls.execute(**{k: v for k, v in args.items() if k in params}).args


def run_prompt(prompt, bytes_image=False):
    cache = {}

    def get(nid):
        if nid not in cache:
            node = prompt[nid]
            args = {k: (get(v[0])[v[1]] if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) else v) for k, v in node["inputs"].items()}
            cache[nid] = call(node["class_type"], args, bytes_image)
        return cache[nid]
    return {nid: get(nid)[0] for nid, n in sorted(prompt.items()) if n["class_type"] == "SaveImage"}


def reduce(images):
    """SaveImage's bytes (255·x clipped, truncated) of the first image: sampled pixels and GRID×GRID block means."""
    px = np.clip(255.0 * images[0].cpu().numpy(), 0, 255).astype(np.uint8)
    h, w, c = px.shape
    flat = px.reshape(h * w, c)
    idx = [(k * 104729) % (h * w) for k in range(SAMPLES)]
    bh, bw = h // GRID, w // GRID
    blocks = px[: bh * GRID, : bw * GRID].astype(np.float64).reshape(GRID, bh, GRID, bw, c).mean(axis=(1, 3))
    means = np.floor(blocks + 0.5).clip(0, 255).astype(np.uint8)
    return {"shape": [h, w, c], "samples": base64.b64encode(flat[idx].tobytes()).decode(), "means": base64.b64encode(means.tobytes()).decode()}, px


# Where an IMAGE that a node computed feeds another node's arithmetic (VAEDecode → ImageUpscaleWithModel), the
# service's 8-bit IMAGE makes a difference the network amplifies: these examples are also run with every IMAGE
# output of the reference's nodes held as 8-bit (`bytes`), besides as the reference runs them.
BYTES_TOO = ["esrgan_example"]
EXAMPLES = ["img2img_workflow", "inpaint_example", "inpaint_anythingv3_woman", "inpain_model_outpainting", "sdxl_simple_example", "esrgan_example", "hiresfix_latent_workflow"]
only = os.environ.get("EXAMPLES")
out = json.load(open(out_path)) if only and os.path.exists(out_path) else {}
with torch.inference_mode():
    for name in EXAMPLES:
        if only and name not in only.split(","):
            continue
        prompt = json.load(open(os.path.join(examples_dir, name + ".json")))
        # The input the frontend fills in with its default where the prompt predates it (FRONTEND_DEFAULTS).
        for nid, inputs in twins["frontend"].get(name, {}).items():
            prompt[nid]["inputs"].update(inputs)
        out[name] = {}
        for bytes_image in [False, True] if name in BYTES_TOO else [False]:
            for nid, images in run_prompt(prompt, bytes_image).items():
                reduced, px = reduce(images)
                if bytes_image:
                    out[name][nid]["bytes"] = reduced
                else:
                    out[name][nid] = reduced
                if dump_dir:
                    from PIL import Image
                    Image.fromarray(px).save(os.path.join(dump_dir, f"{name}-{nid}{'-bytes' if bytes_image else ''}.png"))
        print(name, {k: v["shape"] for k, v in out[name].items()}, flush=True)

with open(out_path, "w") as fh:
    json.dump(out, fh)
print("wrote", out_path)
