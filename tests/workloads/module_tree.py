"""Target for test_module_attributes.py: modules whose children gpuprof names.

Usage: module_tree.py WORKDIR

Builds torchvision's resnet18 and a two-layer nn.TransformerEncoder, runs
each forward once (torch's __getattr__ and __setattr__ have touched every
module's __dict__ by then, as in a real run), and writes `pairs`: one line
per (parent, child) pair of named_modules(), "PARENT CHILD NAME" (hex ids,
the child's attribute name in the parent), then one line "stranger PARENT
CHILD" for a module the parent does not hold (a Linear called
functionally), then `ready` (its pid). Waits for `go` and exits 0.
"""
import os
import sys

from handshake import signal_file, wait_for_file


def pairs_of(model):
    """(parent, child, name) for every module and each child it holds."""
    out = []
    for _, parent in model.named_modules():
        for name, child in parent.named_children():
            out.append((parent, child, name))
    return out


def main():
    workdir = sys.argv[1]
    import torch
    import torchvision
    torch.manual_seed(0)
    resnet = torchvision.models.resnet18().eval()
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    with torch.no_grad():
        resnet(torch.rand(1, 3, 64, 64))
        encoder(torch.rand(5, 1, 32))
    stranger = torch.nn.Linear(4, 4)  # held by no module
    lines = ["%x %x %s" % (id(p), id(c), name) for model in (resnet, encoder) for p, c, name in pairs_of(model)]
    lines.append("stranger %x %x" % (id(resnet.layer1), id(stranger)))
    signal_file(workdir, "pairs", "\n".join(lines) + "\n")
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    return 0


if __name__ == "__main__":
    sys.exit(main())
