"""torch.profiler's recipe workload, with no profiler code in it.

PyTorch's profiler recipe (the tutorials' recipes/profiler_recipe) profiles
`model(inputs)` for resnet18 on a batch of 5 224x224 images. Here gpuprof
does the profiling from outside, so the script is just the workload.
"""
import torch
import torchvision.models as models

model = models.resnet18()
inputs = torch.randn(5, 3, 224, 224)
model(inputs)
print("demo: resnet18 forward on a batch of 5 images done", flush=True)
