#!/usr/bin/env python3
"""
Runs the reference's samplers and custom-sampling nodes (ComfyUI commit
a125cd84: comfy/k_diffusion/sampling.py, comfy/extra_samplers/uni_pc.py,
comfy_extras/nodes_custom_sampler.py) on the tiny generated checkpoint and
writes what they computed as JSON for services/workflow/test/models-samplers.test.ts.
Run by hand, not in CI:

  REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI TORCHSDE_DIR=/path/to/torchsde-checkout \
    npx tsx bench/workflow/models-reference-samplers.ts

The SDE samplers need torchsde (its public source, google-research/torchsde; not on
the local package index): TORCHSDE_DIR is put on sys.path. torchsde's one other
dependency, `trampoline`, is a small generator driver that is not on the index either;
when it is missing, this script registers an equivalent driver (run a generator,
push the generators it yields, replace the running one on TailCall) before importing it.

Models are built the way models-reference.py builds them (the reference's own UNet,
text encoder and ModelPatcher from the checkpoint's keys).
"""
import json
import sys
comfy_dir, ckpt, out_path = sys.argv[1:4]
from reference_env import flat, open_reference, pattern, summary as summary_of  # noqa: E402

torch = open_reference(comfy_dir, sde=True)


def summary(t, head=64):
    return summary_of(t, head)

import torchsde  # noqa: E402,F401  (the real one: the SDE samplers' noise)
from safetensors.torch import load_file  # noqa: E402
import comfy.model_detection  # noqa: E402
import comfy.model_patcher  # noqa: E402
import comfy.sample  # noqa: E402
import comfy.samplers  # noqa: E402
import comfy.sd1_clip  # noqa: E402
import comfy.supported_models  # noqa: E402
import comfy.utils  # noqa: E402
from comfy.k_diffusion.sampling import BrownianTreeNoiseSampler  # noqa: E402
import comfy_extras.nodes_custom_sampler as ncs  # noqa: E402

comfy.utils.PROGRESS_BAR_ENABLED = False
sd = load_file(ckpt)
out = {}


unet_config = comfy.model_detection.detect_unet_config(sd, "model.diffusion_model.")
model = comfy.supported_models.SD15(unet_config).get_model(sd, "model.diffusion_model.")
model.load_model_weights(sd, "model.diffusion_model.")
patcher = comfy.model_patcher.ModelPatcher(model, load_device=torch.device("cpu"), offload_device=torch.device("cpu"))

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
tokenizer = comfy.sd1_clip.SDTokenizer(embedding_directory=[tempfile.mkdtemp()], embedding_size=hidden)


def encode(text):
    cond, _ = clip.encode_token_weights(tokenizer.tokenize_with_weights(text))
    return [[cond, {}]]


positive = encode("a photo of a cat")
negative = encode("")
middle = encode("a dog")
zeros = torch.zeros((1, 4, 8, 8))
init = pattern((1, 4, 8, 8))

# --- the Brownian tree on its own: BrownianTreeNoiseSampler(σ_min, σ_max, seed) at several (σ, σ') queries, float32 σ as samplers pass them.
out["brownian"] = {}
for seed, lo, hi, queries in [
    (5, 0.0291675, 14.614642, [(14.614642, 9.7), (9.7, 3.2), (3.2, 0.0291675), (14.614642, 0.0291675), (1.23456789, 1.2345), (0.5, 0.75)]),
    (2**63 + 12345, 0.1, 3.0, [(3.0, 0.1), (2.0, 1.0), (0.1, 0.35)]),
]:
    ns = BrownianTreeNoiseSampler(zeros, torch.tensor(lo), torch.tensor(hi), seed=seed, cpu=True)
    for a, b in queries:
        out["brownian"][f"{seed}:{lo}:{hi}:{a}:{b}"] = flat(ns(torch.tensor(a), torch.tensor(b)))[:48]

# --- the samplers through KSampler's path (comfy.sample.sample), as models-reference.py runs the others.
cases = [
    ("heunpp2", "karras", 5, 7.0, 1.0, 30), ("dpm_fast", "normal", 5, 7.0, 1.0, 31), ("dpm_fast", "karras", 6, 7.0, 1.0, 32),
    ("dpm_adaptive", "karras", 4, 7.0, 1.0, 33), ("dpmpp_sde", "karras", 4, 7.0, 1.0, 34), ("dpmpp_sde_gpu", "normal", 3, 6.0, 1.0, 35),
    ("dpmpp_2m_sde", "karras", 5, 7.0, 1.0, 36), ("dpmpp_2m_sde_gpu", "exponential", 4, 7.0, 1.0, 37),
    ("dpmpp_2m_sde_heun", "karras", 5, 7.0, 1.0, 38), ("dpmpp_2m_sde_heun_gpu", "normal", 4, 7.0, 1.0, 39),
    ("dpmpp_3m_sde", "karras", 6, 7.0, 1.0, 40), ("dpmpp_3m_sde_gpu", "simple", 5, 7.0, 1.0, 41),
    ("deis", "karras", 6, 7.0, 1.0, 42), ("deis", "normal", 4, 7.0, 0.6, 43),
    ("res_multistep", "karras", 5, 7.0, 1.0, 44), ("res_multistep_cfg_pp", "normal", 4, 1.5, 1.0, 45),
    ("res_multistep_ancestral", "karras", 5, 7.0, 1.0, 46), ("res_multistep_ancestral_cfg_pp", "karras", 4, 1.2, 1.0, 47),
    ("er_sde", "karras", 6, 7.0, 1.0, 48), ("seeds_2", "karras", 4, 7.0, 1.0, 49), ("seeds_3", "normal", 3, 7.0, 1.0, 50),
    ("sa_solver", "karras", 8, 7.0, 1.0, 51), ("sa_solver_pece", "normal", 6, 7.0, 1.0, 52),
    ("uni_pc", "karras", 6, 7.0, 1.0, 53), ("uni_pc_bh2", "normal", 5, 7.0, 1.0, 54), ("uni_pc", "simple", 3, 7.0, 0.7, 55),
    ("dpmpp_2m_sde", "karras", 4, 7.0, 1.0, 2**63 + 12345), ("dpmpp_sde", "beta", 3, 5.0, 0.8, 56),
]
out["sample"] = {}
for sampler, sched, steps, cfg, denoise, seed in cases:
    lat = zeros if denoise == 1.0 else init
    noise = comfy.sample.prepare_noise(lat, seed)
    s = comfy.sample.sample(patcher, noise, steps, cfg, sampler, sched, positive, negative, lat, denoise=denoise, disable_pbar=True, seed=seed)
    out["sample"][f"{sampler}:{sched}:{steps}:{cfg}:{denoise}:{seed}"] = summary(s)
    print(sampler, sched, flush=True)

# A batch of two: one Brownian tree over the whole batch.
batch = torch.zeros((2, 4, 8, 8))
s = comfy.sample.sample(patcher, comfy.sample.prepare_noise(batch, 57), 4, 7.0, "dpmpp_2m_sde", "karras", positive, negative, batch, disable_pbar=True, seed=57)
out["batch"] = summary(s)

# --- the custom-sampling nodes, called as the reference's executor calls them.
def node(cls, *args, **kwargs):
    obj = cls()
    return getattr(obj, cls.FUNCTION)(*args, **kwargs)


def node_info(name, cls, module):
    """/object_info's entry for a class, as the reference's server builds it."""
    info = {"input": cls.INPUT_TYPES(), "input_order": {k: list(v.keys()) for k, v in cls.INPUT_TYPES().items()}, "output": list(cls.RETURN_TYPES)}
    info["output_is_list"] = list(getattr(cls, "OUTPUT_IS_LIST", [False] * len(cls.RETURN_TYPES)))
    info["output_name"] = list(getattr(cls, "RETURN_NAMES", cls.RETURN_TYPES))
    info["name"] = name
    info["display_name"] = ncs.NODE_DISPLAY_NAME_MAPPINGS.get(name, name)
    info["description"] = getattr(cls, "DESCRIPTION", "")
    info["python_module"] = module
    info["category"] = getattr(cls, "CATEGORY", "sd")
    info["output_node"] = getattr(cls, "OUTPUT_NODE", False) is True
    if hasattr(cls, "OUTPUT_TOOLTIPS"):
        info["output_tooltips"] = cls.OUTPUT_TOOLTIPS
    if getattr(cls, "DEPRECATED", False):
        info["deprecated"] = True
    if getattr(cls, "EXPERIMENTAL", False):
        info["experimental"] = True
    return info


out["object_info"] = {name: node_info(name, cls, "comfy_extras.nodes_custom_sampler") for name, cls in ncs.NODE_CLASS_MAPPINGS.items()}

out["schedulers"] = {
    "basic:karras:5:1.0": flat(node(ncs.BasicScheduler, patcher, "karras", 5, 1.0)[0]),
    "basic:normal:4:0.6": flat(node(ncs.BasicScheduler, patcher, "normal", 4, 0.6)[0]),
    "basic:beta:3:0.0": flat(node(ncs.BasicScheduler, patcher, "beta", 3, 0.0)[0]),
    "turbo:3:1.0": flat(node(ncs.SDTurboScheduler, patcher, 3, 1.0)[0]),
    "turbo:2:0.5": flat(node(ncs.SDTurboScheduler, patcher, 2, 0.5)[0]),
    "turbo:10:0.35": flat(node(ncs.SDTurboScheduler, patcher, 10, 0.35)[0]),
    "beta:7:0.5:0.7": flat(node(ncs.BetaSamplingScheduler, patcher, 7, 0.5, 0.7)[0]),
}
out["percent_to_sigma"] = {f"{p}:{a}": node(ncs.SamplingPercentToSigma, patcher, p, a)[0] for p, a in [(0.3, False), (0.0, True), (1.0, True), (0.0, False), (1.0, False), (0.75, True)]}


def lat(t):
    return {"samples": t.clone()}


karras4 = node(ncs.BasicScheduler, patcher, "karras", 4, 1.0)[0]
samplers = {
    "select:dpmpp_2m_sde": node(ncs.KSamplerSelect, "dpmpp_2m_sde")[0],
    "euler_ancestral:0.5:0.8": node(ncs.SamplerEulerAncestral, 0.5, 0.8)[0],
    "euler_ancestral_cfg_pp:0.6:0.9": node(ncs.SamplerEulerAncestralCFGPP, 0.6, 0.9)[0],
    "lms:3": node(ncs.SamplerLMS, 3)[0],
    "dpmpp_2m_sde:heun:0.6:0.9:cpu": node(ncs.SamplerDPMPP_2M_SDE, "heun", 0.6, 0.9, "cpu")[0],
    "dpmpp_3m_sde:0.7:1.1:cpu": node(ncs.SamplerDPMPP_3M_SDE, 0.7, 1.1, "cpu")[0],
    "dpmpp_sde:0.8:1.0:0.4:gpu": node(ncs.SamplerDPMPP_SDE, 0.8, 1.0, 0.4, "gpu")[0],
    "dpmpp_2s_ancestral:0.5:1.0": node(ncs.SamplerDPMPP_2S_Ancestral, 0.5, 1.0)[0],
    "dpm_adaptive:2": node(ncs.SamplerDPMAdaptative, 2, 0.05, 0.0078, 0.05, 0.0, 1.0, 0.0, 0.81, 0.0, 1.0)[0],
    "er_sde:reverse:2:0.5:1.0": node(ncs.SamplerER_SDE, "Reverse-time SDE", 2, 0.5, 1.0)[0],
    "er_sde:ode:3:1.0:1.0": node(ncs.SamplerER_SDE, "ODE", 3, 1.0, 1.0)[0],
    "sa_solver:0.8:0.1:0.9:1.0:2:3:pece:simple": node(ncs.SamplerSASolver, patcher, 0.8, 0.1, 0.9, 1.0, 2, 3, True, True)[0],
}
out["custom"] = {}
for i, (key, sampler) in enumerate(samplers.items()):
    guider = node(ncs.CFGGuider, patcher, positive, negative, 5.0)[0]
    noise = node(ncs.RandomNoise, 70 + i)[0]
    o, d = node(ncs.SamplerCustomAdvanced, noise, guider, sampler, karras4, lat(zeros))
    out["custom"][key] = {"seed": 70 + i, "output": summary(o["samples"]), "denoised": summary(d["samples"])}
    print(key, flush=True)

# SamplerCustom: with noise from its seed, and without noise from a non-empty latent over half the schedule.
o, d = node(ncs.SamplerCustom, patcher, True, 60, 6.5, positive, negative, samplers["select:dpmpp_2m_sde"], karras4, lat(zeros))
out["sampler_custom_noise"] = {"output": summary(o["samples"]), "denoised": summary(d["samples"])}
half = node(ncs.BasicScheduler, patcher, "normal", 4, 0.5)[0]
o, d = node(ncs.SamplerCustom, patcher, False, 61, 6.5, positive, negative, samplers["euler_ancestral:0.5:0.8"], half, lat(init))
out["sampler_custom_plain"] = {"output": summary(o["samples"]), "denoised": summary(d["samples"])}

# The guiders: BasicGuider with DisableNoise on a non-empty latent, DualCFGGuider in both styles.
euler = node(ncs.KSamplerSelect, "euler")[0]
o, _ = node(ncs.SamplerCustomAdvanced, node(ncs.DisableNoise)[0], node(ncs.BasicGuider, patcher, positive)[0], samplers["lms:3"], half, lat(init))
out["basic_guider"] = summary(o["samples"])
o, _ = node(ncs.SamplerCustomAdvanced, node(ncs.RandomNoise, 62)[0], node(ncs.BasicGuider, patcher, positive)[0], node(ncs.KSamplerSelect, "euler_cfg_pp")[0], karras4, lat(zeros))
out["basic_guider_cfg_pp"] = summary(o["samples"])
for style, sampler_name in [("regular", "euler"), ("nested", "dpmpp_2m")]:
    g = node(ncs.DualCFGGuider, patcher, positive, middle, negative, 4.0, 2.0, style)[0]
    o, _ = node(ncs.SamplerCustomAdvanced, node(ncs.RandomNoise, 63)[0], g, node(ncs.KSamplerSelect, sampler_name)[0], karras4, lat(zeros))
    out[f"dual_{style}"] = summary(o["samples"])
g = node(ncs.DualCFGGuider, patcher, positive, middle, negative, 1.0, 1.0, "regular")[0]
o, _ = node(ncs.SamplerCustomAdvanced, node(ncs.RandomNoise, 64)[0], g, euler, karras4, lat(zeros))
out["dual_cfg1"] = summary(o["samples"])

# AddNoise: a non-empty latent (scaled in and out) and an empty one, over a schedule and over one σ.
out["add_noise"] = {
    "pattern": summary(node(ncs.AddNoise, patcher, node(ncs.RandomNoise, 65)[0], karras4, lat(init))[0]["samples"]),
    "empty": summary(node(ncs.AddNoise, patcher, node(ncs.RandomNoise, 66)[0], half, lat(zeros))[0]["samples"]),
    "one": summary(node(ncs.AddNoise, patcher, node(ncs.RandomNoise, 67)[0], karras4[:1], lat(init))[0]["samples"]),
}

# SamplerEulerCFGpp (comfy_extras/nodes_advanced_samplers.py): both versions through CFGGuider at cfg 1.5.
import comfy_extras.nodes_advanced_samplers as nas  # noqa: E402
out["euler_cfgpp"] = {}
for i, version in enumerate(["regular", "alternative"]):
    smp = nas.SamplerEulerCFGpp.execute(version).args[0]
    o, _ = node(ncs.SamplerCustomAdvanced, node(ncs.RandomNoise, 80 + i)[0], node(ncs.CFGGuider, patcher, positive, negative, 1.5)[0], smp, karras4, lat(zeros))
    out["euler_cfgpp"][version] = summary(o["samples"])
# SamplerLCMUpscale: the latent enlarged between steps, the fresh noise from torch's global generator.
out["lcm_upscale"] = {}
for i, (ratio, steps, method) in enumerate([(1.5, -1, "bislerp"), (1.5, -1, "bilinear"), (2.0, 1, "nearest-exact"), (1.3, 2, "bicubic"), (1.7, 3, "area")]):
    smp = nas.SamplerLCMUpscale.execute(ratio, steps, method).args[0]
    o, d = node(ncs.SamplerCustomAdvanced, node(ncs.RandomNoise, 90 + i)[0], node(ncs.CFGGuider, patcher, positive, negative, 5.0)[0], smp, karras4, lat(zeros))
    out["lcm_upscale"][f"{ratio}:{steps}:{method}"] = {"seed": 90 + i, "output": summary(o["samples"]), "denoised": summary(d["samples"])}
# /object_info of the two nodes of nodes_advanced_samplers (V3 nodes: the server asks the class itself).
out["object_info_advanced"] = {}
for cls in [nas.SamplerLCMUpscale, nas.SamplerEulerCFGpp]:
    info = cls.GET_NODE_INFO_V1()
    info["python_module"] = "comfy_extras.nodes_advanced_samplers"
    out["object_info_advanced"][info["name"]] = info

with open(out_path, "w") as fh:
    json.dump(out, fh, separators=(",", ":"))
print("wrote", out_path)
