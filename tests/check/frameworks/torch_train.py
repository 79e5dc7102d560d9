# A correct PyTorch training loop: a small MLP on random data, on the GPU, with pinned host
# batches copied in. gpumem check must report no error for it with no option given: what
# PyTorch's caching allocators hold at exit is still reachable (and suppressed by default).
import sys

import torch

torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
for step in range(50):
    x = torch.randn(128, 256).pin_memory().to(dev, non_blocking=True)
    y = torch.randint(0, 10, (128,)).to(dev)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(f"loss {loss.item():.4f}")
print(f"{sys.argv[0].rsplit('/', 1)[-1][:-3]}: done")
