"""Plain PyTorch reference of `nibble train`'s model and optimizer, for speed.

The same byte-level decoder as train/src/torch/trainer.cpp -- byte embedding +
learned positions, pre-norm blocks of causal attention (qkv, proj) and a GELU
MLP (fc1, fc2) without biases, final LayerNorm, untied LM head -- written the
way a PyTorch user would: BF16 autocast, scaled_dot_product_attention,
torch.compile, fused AdamW (betas 0.9/0.95, weight decay on the matrices),
gradient clipping, warm-up then cosine decay, windows drawn at random from
train.bin. Every linear runs in BF16: this is the yardstick of the bf16
recipe's speed, not a second implementation of the quantized recipes.

    python3 train/reference/train_gpt.py --data data/brown --layers 8 --d-model 512 \
        --heads 8 --ctx 256 --batch 64 --steps 60 --json out.json
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, mlp_mult):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, mlp_mult * d, bias=False)
        self.fc2 = nn.Linear(mlp_mult * d, d, bias=False)

    def forward(self, h):
        B, T, d = h.shape
        q, k, v = self.qkv(self.ln1(h)).split(d, dim=-1)
        shape = (B, T, self.heads, d // self.heads)
        y = F.scaled_dot_product_attention(q.view(shape).transpose(1, 2), k.view(shape).transpose(1, 2),
                                           v.view(shape).transpose(1, 2), is_causal=True)
        h = h + self.proj(y.transpose(1, 2).reshape(B, T, d))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class Decoder(nn.Module):
    def __init__(self, layers, d, heads, ctx, mlp_mult=4):
        super().__init__()
        self.tok = nn.Embedding(256, d)
        self.pos = nn.Parameter(torch.zeros(ctx, d))
        self.blocks = nn.ModuleList(Block(d, heads, mlp_mult) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, 256, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                scale = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "fc2.weight")) else 0.02
                nn.init.normal_(p, std=scale)

    def forward(self, tokens):
        h = self.tok(tokens) + self.pos[: tokens.shape[1]]
        for b in self.blocks:
            h = b(h)
        return self.head(self.lnf(h)).float()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="prepared data directory (train.bin)")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--timed-from", type=int, default=10, help="steps before this are warm-up (compilation)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--json", help="write the measurement here")
    a = ap.parse_args()

    torch.manual_seed(a.seed)
    dev = torch.device("cuda")
    data = torch.from_numpy(__import__("numpy").fromfile(f"{a.data}/train.bin", dtype="uint8")).to(dev)
    model = Decoder(a.layers, a.d_model, a.heads, a.ctx).to(dev)
    params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() == 2 and p is not model.tok.weight and p is not model.pos]
    rest = [p for p in model.parameters() if not any(p is q for q in decay)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=torch.tensor(a.lr, device=dev), betas=(0.9, 0.95), fused=True)
    fwd = model if a.no_compile else torch.compile(model)
    span = torch.arange(a.ctx + 1, device=dev)
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)

    def lr_at(step):
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        t = min(1.0, (step - a.warmup) / max(1, a.steps - a.warmup))
        return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    losses = torch.zeros(a.steps, device=dev)
    t0 = None
    for step in range(a.steps):
        if step == a.timed_from:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"].fill_(lr_at(step))
        off = torch.randint(0, data.numel() - a.ctx - 1, (a.batch, 1), device=dev, generator=gen)
        batch = data[off + span].long()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = fwd(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        losses[step] = loss.detach()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    tokens = (a.steps - a.timed_from) * a.batch * a.ctx
    out = {"parameters": params, "steps": a.steps, "timed_steps": a.steps - a.timed_from,
           "seconds": seconds, "tokens_per_s": tokens / seconds, "ms_per_step": 1000 * seconds / (a.steps - a.timed_from),
           "final_loss": losses[-1].item(), "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "compiled": not a.no_compile}
    print(json.dumps(out))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
