"""
Writes the small PyTorch files test/models-torch-files.test.ts reads, with the
real torch.save (run by hand: /work/team/refvenv/bin/python bench/workflow/torch-fixtures.py),
each beside a .safetensors twin holding the same tensors, and checks that the
reference's loader (torch.load(weights_only=True) after comfy's add_safe_globals) accepts
the good ones and refuses the hostile ones. Output: services/workflow/test/fixtures/torch/.
"""
import collections, os, sys
import numpy as np
import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'services', 'workflow', 'test', 'fixtures', 'torch')
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(0)

class ModelCheckpoint:  # as comfy/utils.py registers it
    def __init__(self):
        self.monitor = 'val/loss'
        self.best_model_score = np.float64(0.25)
ModelCheckpoint.__module__ = 'pytorch_lightning.callbacks.model_checkpoint'
import types  # a stand-in module, so that pickle can name the class
for m in ['pytorch_lightning', 'pytorch_lightning.callbacks', 'pytorch_lightning.callbacks.model_checkpoint']:
    sys.modules[m] = types.ModuleType(m)
sys.modules['pytorch_lightning.callbacks.model_checkpoint'].ModelCheckpoint = ModelCheckpoint
from numpy.core.multiarray import scalar
from numpy import dtype
from numpy.dtypes import Float64DType
from _codecs import encode
torch.serialization.add_safe_globals([ModelCheckpoint, scalar, dtype, Float64DType, encode])

def p(name):
    return os.path.join(OUT, name)

# 1. a module's state dict (OrderedDict with _metadata): fp32 Linear/Conv, BatchNorm buffers (int64), fp16 and bf16 copies
net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(), torch.nn.Linear(4, 2))
sd = net.state_dict()
sd['half.weight'] = torch.randn(3, 5).half()
sd['bf16.weight'] = torch.randn(2, 3).bfloat16()
sd['scalar'] = torch.tensor(0.5)
torch.save(sd, p('state.pt'))
save_file({k: v.contiguous() for k, v in sd.items()}, p('state.safetensors'))

# 2. a Lightning-style .ckpt: the state dict under "state_dict", with a callback object and numpy scalars beside it
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
inner = collections.OrderedDict()
inner['model.a'] = torch.randn(2, 2)
inner['model.tied'] = inner['model.a']  # one storage, two names
inner['model.rows'] = base[1:3]  # a contiguous view at a storage offset
inner['model.p'] = torch.nn.Parameter(torch.ones(3))
ck = {'state_dict': inner, 'global_step': 7, 'epoch': 1, 'callbacks': {'ModelCheckpoint': ModelCheckpoint()}, 'loss': np.float64(0.125)}
torch.save(ck, p('lightning.ckpt'))
save_file({k: v.detach().contiguous().clone() for k, v in inner.items()}, p('lightning.safetensors'))

# 3. a textual inversion as A1111 saves it
emb = torch.randn(2, 8, requires_grad=True)
torch.save({'string_to_token': {'*': 265}, 'string_to_param': {'*': emb}, 'name': 'tiny', 'step': 10, 'sd_checkpoint': 'abc', 'sd_checkpoint_name': 'tiny'}, p('ti.pt'))
save_file({'emb': emb.detach().clone()}, p('ti.safetensors'))

# 4. a transposed (non-contiguous) tensor
torch.save({'t': torch.randn(2, 3).t()}, p('transposed.pt'))
# 5. the legacy format
torch.save({'a': torch.ones(2)}, p('legacy.pt'), _use_new_zipfile_serialization=False)

# 6. hostile: a pickle that calls os.system / builtins.eval when loaded without weights_only
class Evil:
    def __init__(self, fn, arg):
        self.fn, self.arg = fn, arg
    def __reduce__(self):
        return (self.fn, (self.arg,))
torch.save({'w': torch.ones(1), 'x': Evil(os.system, 'echo pwned > /tmp/pwned')}, p('evil-os.pt'))
torch.save({'w': torch.ones(1), 'x': Evil(eval, '1+1')}, p('evil-eval.pt'))

for name in ['state.pt', 'lightning.ckpt', 'ti.pt', 'transposed.pt']:
    torch.load(p(name), weights_only=True)
for name in ['evil-os.pt', 'evil-eval.pt']:
    try:
        torch.load(p(name), weights_only=True)
        sys.exit(f'{name} loaded')
    except Exception as e:
        print(name, 'refused by torch:', str(e).splitlines()[0][:120])
for f in sorted(os.listdir(OUT)):
    print(f, os.path.getsize(p(f)))
