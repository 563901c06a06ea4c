"""
The reference (a ComfyUI source tree) made importable for the hand-run scripts of bench/workflow that compute
reference values (models-reference*.py, samplers-reference.py, models-bench.py), and the helpers they share.

ComfyUI imports modules for parts these scripts never run (other model families' video, audio and upscale code).
Those that are not installable from the local package index (models.md §6) get an empty stand-in. torchsde
is real where a script needs the SDE samplers' noise (TORCHSDE_DIR names its public source), with an
equivalent of its `trampoline` dependency when that is missing.
"""
import importlib.util
import os
import sys
import types

_OPTIONAL = ["torchvision", "torchvision.transforms", "torchvision.transforms.functional", "torchaudio", "kornia", "spandrel", "av"]


class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(f"{self.__name__}.{name}")

    def __call__(self, *a, **k):
        return _Stub(self.__name__)


def _install_trampoline():
    """torchsde's `trampoline` (not on the package index): run a generator, push those it yields, replace the running one on TailCall."""
    if importlib.util.find_spec("trampoline") is not None:
        return
    tr = types.ModuleType("trampoline")

    class TailCall(BaseException):
        def __init__(self, call):
            super().__init__(call)
            self.call = call

    def trampoline(gen):
        stack, value = [gen], None
        while stack:
            try:
                value = stack[-1].send(value)
                stack.append(value)
                value = None
            except StopIteration as e:
                stack.pop()
                value = e.value
            except TailCall as t:
                stack.pop()
                stack.append(t.call)
                value = None
        return value

    tr.TailCall, tr.trampoline = TailCall, trampoline
    sys.modules["trampoline"] = tr


def open_reference(comfy_dir, sde=False, threads=1):
    """Puts the checkout first on sys.path with --cpu, stands in for the optional modules, sets the reference's
    options for a library caller; returns torch (one thread unless `threads` is None, gradients off)."""
    sys.path.insert(0, comfy_dir)
    if sde:
        if os.environ.get("TORCHSDE_DIR"):
            sys.path.insert(0, os.environ["TORCHSDE_DIR"])
        _install_trampoline()
    sys.argv = [sys.argv[0], "--cpu"]
    import transformers  # noqa: F401  (before the stand-ins: it probes for torchvision itself)
    from transformers import CLIPTokenizer  # noqa: F401
    for name in _OPTIONAL if sde else ["torchsde", *_OPTIONAL]:
        top = name.split(".")[0]
        if isinstance(sys.modules.get(top), _Stub) or (top not in sys.modules and importlib.util.find_spec(top) is None):
            sys.modules[name] = _Stub(name)
    import torch
    import comfy.options
    comfy.options.enable_args_parsing(False)
    import comfy.cli_args
    comfy.cli_args.args.cpu = True
    if threads is not None:
        torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    return torch


def flat(t):
    return [float(f"{v:.8g}") for v in t.detach().float().flatten().tolist()]


def summary(t, head=48):
    """The first values, the sum and the largest magnitude: enough to catch a wrong tensor, small enough to commit."""
    v = t.detach().double().flatten()
    return {"shape": list(t.shape), "head": flat(t)[:head], "sum": float(v.sum()), "absmax": float(v.abs().max())}


def pattern(shape, scale=1.5):
    """Deterministic input both sides compute: scale * sin(0.37 i)."""
    import torch
    n = 1
    for d in shape:
        n *= d
    return (torch.sin(torch.arange(n, dtype=torch.float64) * 0.37) * scale).float().reshape(shape)


def sd_vae(sd, prefix="first_stage_model."):
    """comfy.sd.VAE over a generated checkpoint's VAE, its widths and depths read from the keys."""
    import comfy.sd
    vae_sd = {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}
    ch = vae_sd["decoder.conv_out.weight"].shape[1]
    levels = len({k.split(".")[2] for k in vae_sd if k.startswith("decoder.up.")})
    ch_mult = [vae_sd[f"decoder.up.{l}.block.0.conv2.weight"].shape[0] // ch for l in range(levels)]
    res_blocks = len({k.split(".")[4] for k in vae_sd if k.startswith("decoder.up.0.block.")}) - 1
    ddconfig = {"double_z": True, "z_channels": 4, "resolution": 256, "in_channels": 3, "out_ch": 3, "ch": ch, "ch_mult": ch_mult, "num_res_blocks": res_blocks, "attn_resolutions": [], "dropout": 0.0}
    return comfy.sd.VAE(sd=vae_sd, config={"params": {"ddconfig": ddconfig, "embed_dim": 4}})


def import_standing_in(name):
    """Imports `name`, standing in (as open_reference does) for every module it asks for that is not installed."""
    while True:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is None or e.name == name or e.name.startswith(name + "."):
                raise
            for k in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[k]
            parts = e.name.split(".")
            for i in range(1, len(parts) + 1):
                sys.modules.setdefault(".".join(parts[:i]), _Stub(".".join(parts[:i])))


def text_config(sd, prefix, act):
    """The CLIP config of a text tower from its (converted, transformers-layout) keys."""
    hidden = sd[prefix + "text_model.embeddings.token_embedding.weight"].shape[1]
    lp = prefix + "text_model.encoder.layers."
    layers = len({k[len(lp):].split(".")[0] for k in sd if k.startswith(lp)})
    return {"hidden_act": act, "hidden_size": hidden, "intermediate_size": sd[prefix + "text_model.encoder.layers.0.mlp.fc1.weight"].shape[0],
            "num_attention_heads": hidden // 64, "num_hidden_layers": layers, "max_position_embeddings": 77, "vocab_size": 49408,
            "layer_norm_eps": 1e-5, "projection_dim": hidden, "eos_token_id": 49407}


def load_family(path, cls):
    """A generated checkpoint of an SD2.x/SDXL family class (`cls`) as the reference's loader builds one: model, ModelPatcher, CLIP and VAE."""
    import tempfile
    import torch
    from safetensors.torch import load_file
    import comfy.model_detection
    import comfy.model_patcher
    import comfy.sd
    sd = load_file(path)
    unet_config = comfy.model_detection.detect_unet_config(sd, "model.diffusion_model.")
    model_config = cls(unet_config)
    model = model_config.get_model(sd, "model.diffusion_model.")
    model.load_model_weights(sd, "model.diffusion_model.")
    patcher = comfy.model_patcher.ModelPatcher(model, load_device=torch.device("cpu"), offload_device=torch.device("cpu"))
    clip_sd = model_config.process_clip_state_dict({k: v for k, v in sd.items() if k.startswith("cond_stage_model.") or k.startswith("conditioner.")})
    target = model_config.clip_target(clip_sd)
    options = {}
    for name, act in [("clip_l", "quick_gelu"), ("clip_g", "gelu"), ("clip_h", "gelu")]:
        if any(k.startswith(name + ".transformer.text_model.") for k in clip_sd):
            options[name + "_model_config"] = text_config(clip_sd, name + ".transformer.", act)
    # float32 weights: on the CPU the reference's CLIP would round them to float16 (text_encoder_dtype); the comparison is of the math.
    clip = comfy.sd.CLIP(target, embedding_directory=[tempfile.mkdtemp()], model_options={**options, "dtype": torch.float32})
    missing, unexpected = clip.load_sd(clip_sd, full_model=True)
    missing = [m for m in missing if not m.endswith("text_projection.weight") and "logit_scale" not in m and "position_ids" not in m]
    assert not missing, missing
    vprefix = "first_stage_model."
    vae_sd = {k[len(vprefix):]: v for k, v in sd.items() if k.startswith(vprefix)}
    ch = vae_sd["decoder.conv_out.weight"].shape[1]
    levels = len({k.split(".")[2] for k in vae_sd if k.startswith("decoder.up.")})
    ch_mult = [vae_sd[f"decoder.up.{lv}.block.0.conv2.weight"].shape[0] // ch for lv in range(levels)]
    res_blocks = len({k.split(".")[4] for k in vae_sd if k.startswith("decoder.up.0.block.")}) - 1
    ddconfig = {"double_z": True, "z_channels": 4, "resolution": 256, "in_channels": 3, "out_ch": 3, "ch": ch, "ch_mult": ch_mult, "num_res_blocks": res_blocks, "attn_resolutions": [], "dropout": 0.0}
    vae = comfy.sd.VAE(sd=vae_sd, config={"params": {"ddconfig": ddconfig, "embed_dim": 4}})
    return model, patcher, clip, vae


def load_sd1(path):
    """A generated SD1.x checkpoint as models-reference.py builds it: ModelPatcher, an encode(text) with its CLIP, the VAE."""
    import tempfile
    import torch
    from safetensors.torch import load_file
    import comfy.model_detection
    import comfy.model_patcher
    import comfy.sd1_clip
    import comfy.supported_models
    PREFIX = "model.diffusion_model."
    sd = load_file(path)
    config = comfy.model_detection.detect_unet_config(sd, PREFIX)
    m = comfy.supported_models.SD15(config).get_model(sd, PREFIX)
    m.load_model_weights(sd, PREFIX)
    p = comfy.model_patcher.ModelPatcher(m, load_device=torch.device("cpu"), offload_device=torch.device("cpu"))
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
    tokenizer = comfy.sd1_clip.SDTokenizer(embedding_directory=[tempfile.mkdtemp()], embedding_size=hidden)

    def encode(text):
        cond, pooled = clip.encode_token_weights(tokenizer.tokenize_with_weights(text))
        return [[cond, {}]]
    return p, encode, sd_vae(sd)
