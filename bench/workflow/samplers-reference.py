#!/usr/bin/env python3
"""
Times the reference's sampler functions (comfy/k_diffusion/sampling.py, uni_pc.py) on a
synthetic denoiser (D(x, σ) = 0.9·x: no network) for bench/workflow/samplers.ts, which
runs the same samplers here in the same run. Prints one JSON line: {sampler: [seconds per run, ...]}.

  python3 samplers-reference.py COMFY_DIR STEPS RUNS HEIGHT WIDTH SAMPLER...
"""
import json
import os
import sys
import time
import types

comfy_dir, steps, runs, height, width, *names = sys.argv[1:]
steps, runs, height, width = int(steps), int(runs), int(height), int(width)
sys.path.insert(0, comfy_dir)
if os.environ.get("TORCHSDE_DIR"):
    sys.path.insert(0, os.environ["TORCHSDE_DIR"])
sys.argv = [sys.argv[0], "--cpu"]
import importlib.util  # noqa: E402

if importlib.util.find_spec("trampoline") is None:
    # torchsde's trampoline dependency (not on the package index), as models-reference-samplers.py provides it.
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



class _Stub(types.ModuleType):
    """An empty stand-in for the optional modules the reference imports for other model families (models.md §6)."""
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(f"{self.__name__}.{name}")

    def __call__(self, *a, **k):
        return _Stub(self.__name__)


import transformers  # noqa: E402,F401
for name in ["torchvision", "torchvision.transforms", "torchvision.transforms.functional", "torchaudio", "kornia", "spandrel", "av"]:
    top = name.split(".")[0]
    if isinstance(sys.modules.get(top), _Stub) or (top not in sys.modules and importlib.util.find_spec(top) is None):
        sys.modules[name] = _Stub(name)

import torch  # noqa: E402
import comfy.options  # noqa: E402
comfy.options.enable_args_parsing(False)
import comfy.cli_args  # noqa: E402
comfy.cli_args.args.cpu = True
import comfy.model_sampling  # noqa: E402
import comfy.samplers  # noqa: E402
from comfy.k_diffusion import sampling as kd  # noqa: E402
from comfy.extra_samplers import uni_pc  # noqa: E402

torch.set_num_threads(1)
torch.set_grad_enabled(False)


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
