#!/usr/bin/env python3
"""
Times the reference's sampler functions (comfy/k_diffusion/sampling.py, uni_pc.py) on a
synthetic denoiser (D(x, σ) = 0.9·x: no network) for bench/workflow/samplers.ts, which
runs the same samplers here in the same run. Prints one JSON line: {sampler: [seconds per run, ...]}.

  python3 samplers-reference.py COMFY_DIR STEPS RUNS HEIGHT WIDTH SAMPLER...
"""
import json
import sys
import time
import types

comfy_dir, steps, runs, height, width, *names = sys.argv[1:]
steps, runs, height, width = int(steps), int(runs), int(height), int(width)
from reference_env import open_reference  # noqa: E402

torch = open_reference(comfy_dir, sde=True)
import comfy.model_sampling  # noqa: E402
import comfy.samplers  # noqa: E402
from comfy.k_diffusion import sampling as kd  # noqa: E402
from comfy.extra_samplers import uni_pc  # noqa: E402



class Sampling(comfy.model_sampling.ModelSamplingDiscrete, comfy.model_sampling.EPS):
    pass


ms = Sampling(None)


class Model:
    """A denoiser with the attributes the sampler functions read (model_sampling through the patcher)."""
    def __init__(self):
        self.inner_model = types.SimpleNamespace(inner_model=types.SimpleNamespace(model_sampling=ms),
                                                 model_patcher=types.SimpleNamespace(get_model_object=lambda name: ms))

    def __call__(self, x, sigma, **kwargs):
        return x * 0.9


model = Model()
sigmas = comfy.samplers.calculate_sigmas(ms, "karras", steps)
out = {}
for name in names:
    fn = {"uni_pc": uni_pc.sample_unipc}.get(name) or getattr(kd, f"sample_{name}")
    times = []
    for _ in range(runs):
        x = torch.randn((1, 4, height, width), generator=torch.manual_seed(1)) * sigmas[0]
        t0 = time.perf_counter()
        fn(model, x, sigmas.clone(), extra_args={"seed": 1}, disable=True)
        times.append(time.perf_counter() - t0)
    out[name] = times
print(json.dumps(out))
