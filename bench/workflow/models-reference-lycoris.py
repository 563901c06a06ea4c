#!/usr/bin/env python3
"""
Runs the reference's weight patching (comfy.lora.load_lora and calculate_weight,
comfy/weight_adapter at commit a125cd84) on the generated LyCORIS file of
services/workflow/test/models-lycoris-fixture.ts and writes the patched
weights as JSON for services/workflow/test/models-lycoris.test.ts. Run by hand
through models-reference-lycoris.ts:

  python3 models-reference-lycoris.py COMFY_DIR WORK_DIR OUT.json
"""
import json
import sys

comfy_dir, work, out_path = sys.argv[1:4]
import os  # noqa: E402
from reference_env import open_reference  # noqa: E402

torch = open_reference(comfy_dir)
from safetensors.torch import load_file  # noqa: E402
import comfy.lora  # noqa: E402

# The reference cannot patch a conv weight with a CP-form LoKr: torch.kron on einsum's non-contiguous output
# raises, and calculate_weight logs it and leaves the weight unpatched. The service patches it; its expected
# values are the reference's arithmetic with contiguous inputs.
_kron = torch.kron
torch.kron = lambda a, b: _kron(a.contiguous(), b.contiguous())

with open(os.path.join(work, "cases.json")) as f:
    spec = json.load(f)
target = load_file(os.path.join(work, "target.safetensors"))
lycoris = load_file(os.path.join(work, "lycoris.safetensors"))
patches = comfy.lora.load_lora(lycoris, spec["keys"])
out = {"keys": sorted(patches.keys()), "cases": {}}
for name, strengths in spec["cases"].items():
    case = {}
    for key in sorted(patches.keys()):
        w = target[key].clone().float()
        w = comfy.lora.calculate_weight([(s, patches[key], 1.0, None, None) for s in strengths], w, key)
        case[key] = [float("%.8g" % v) for v in w.flatten().tolist()]
    out["cases"][name] = case
with open(out_path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("wrote", out_path)
