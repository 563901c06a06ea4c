#!/usr/bin/env python3
"""
Runs the reference's Canny node (comfy_extras/nodes_canny.py, which calls kornia.filters.canny and keeps its edge map,
repeated to three channels) on the generated images of services/workflow/test/canny-fixture.ts and writes what it
computed as JSON for services/workflow/test/nodes-canny.test.ts: each frame's edge map, kornia's magnitude, the
Gaussian kernel kornia blurs with, the error for crossed thresholds, and the node's /object_info entry. Run by hand
through models-reference-canny.ts:

  python3 models-reference-canny.py COMFY_DIR KORNIA_DIR CASES.json OUT.json

KORNIA_DIR is kornia's public source (pure Python over torch): it is put on sys.path, and its one compiled optional
dependency (kornia_rs, image file I/O that Canny never calls) gets an empty stand-in.
"""
import base64
import json
import sys

import numpy as np

comfy_dir, kornia_dir, cases_path, out_path = sys.argv[1:5]
sys.path.insert(0, kornia_dir)
from reference_env import import_standing_in, open_reference, summary  # noqa: E402

kornia = import_standing_in("kornia")
torch = open_reference(comfy_dir)
from kornia.filters import canny  # noqa: E402
from kornia.filters.kernels import get_gaussian_kernel1d  # noqa: E402
from comfy_extras.nodes_canny import Canny  # noqa: E402

Canny.RELATIVE_PYTHON_MODULE = "comfy_extras.nodes_canny"  # as the reference's loader sets it
out = {"object_info": Canny.GET_NODE_INFO_V1(), "cases": {}}
# The reference's executor runs every node under torch.inference_mode().
with torch.inference_mode():
    out["gaussian"] = [float(v) for v in get_gaussian_kernel1d(5, torch.tensor([[1.0]])).flatten().tolist()]
    for case in json.load(open(cases_path)):
        w, h = case["width"], case["height"]
        frames = [torch.frombuffer(bytearray(base64.b64decode(f)), dtype=torch.uint8).reshape(h, w, 3) for f in case["frames"]]
        # LoadImage's conversion: bytes as float32 / 255.
        image = torch.stack(frames).float() / 255.0
        res = Canny.execute(image, case["low"], case["high"])
        img = res.result[0] if hasattr(res, "result") else res[0]
        assert list(img.shape) == [len(frames), h, w, 3] and bool((img[..., 0:1] == img).all()), "three equal channels"
        assert bool(((img == 0) | (img == 1)).all()), "a binary edge map"
        magnitude = canny(image.movedim(-1, 1), case["low"], case["high"])[0]
        out["cases"][case["name"]] = {
            # Each frame's edge map row-major, eight pixels a byte, the first in the high bit (numpy's packbits).
            "edges": [base64.b64encode(np.packbits((img[k, :, :, 0] > 0.5).numpy().flatten()).tobytes()).decode() for k in range(len(frames))],
            "counts": [int((img[k, :, :, 0] > 0.5).sum()) for k in range(len(frames))],
            "magnitude": summary(magnitude, 64),
        }
        print(case["name"], out["cases"][case["name"]]["counts"], flush=True)
    try:
        Canny.execute(torch.rand(1, 8, 8, 3), 0.6, 0.3)
        out["crossed"] = None
    except Exception as e:  # noqa: BLE001
        out["crossed"] = {"type": type(e).__name__, "message": str(e)}
with open(out_path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("wrote", out_path)
