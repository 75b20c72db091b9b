"""PyTorch + transformers + PEFT as the second implementation of runner's LoRA trainer.

Reads one JSON job on stdin: the GGUF base, a sample (tokens and the scored mask), the rank, alpha,
targets and initial parameters in runner's layout (per target: lora_a [rank, n_in] then lora_b
[n_out, rank], row-major: PEFT's lora_A / lora_B weights in GGUF's row order), and optimizer steps.
Loads the base with transformers' GGUF reader (dequantized, in float64), attaches a PEFT LoraConfig
with those weights, and prints JSON: the summed cross-entropy of the scored tokens, every LoRA
gradient, and the parameters after each optimizer run (each from the initial parameters), in
runner's layout.

llama.cpp's converter permutes the rows of attn_q and attn_k (rope pairing) and transformers
un-permutes them when it reads a GGUF; lora_b's rows are output rows, so they are mapped the same
way, as llama.cpp's convert_lora_to_gguf.py does.
"""
import json
import os
import sys

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoConfig, AutoModelForCausalLM

MODULES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def permute(w, n_head):
    """GGUF row order from transformers' (llama.cpp convert_hf_to_gguf.py's permute)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main():
    job = json.load(sys.stdin)
    path = job["gguf"]
    cfg = AutoConfig.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    cfg.pad_token_id = None  # stories260K's pad id lies outside its vocabulary; it pads nothing here
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path), config=cfg, torch_dtype=torch.float64)
    heads = {"attn_q": cfg.num_attention_heads, "attn_k": cfg.num_key_value_heads}
    rank, alpha = job["rank"], job["alpha"]
    roles = sorted({t["role"] for t in job["targets"]})
    lora = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, bias="none", target_modules=[MODULES[r].split(".")[1] for r in roles])
    peft = get_peft_model(model, lora)
    peft.double()
    flat = torch.tensor(job["params"], dtype=torch.float64)
    params = []
    off = 0
    for t in job["targets"]:
        n_in, n_out = t["nIn"], t["nOut"]
        a = flat[off : off + rank * n_in].reshape(rank, n_in)
        off += rank * n_in
        b = flat[off : off + n_out * rank].reshape(n_out, rank)
        off += n_out * rank
        if t["role"] in heads:
            b = unpermute(b, heads[t["role"]])
        mod = peft.base_model.model.model.layers[t["layer"]].get_submodule(MODULES[t["role"]])
        with torch.no_grad():
            mod.lora_A["default"].weight.copy_(a)
            mod.lora_B["default"].weight.copy_(b)
        params.append((t, mod.lora_A["default"].weight, mod.lora_B["default"].weight))
    tokens = torch.tensor([job["tokens"]])
    scored = torch.tensor(job["scored"][1:], dtype=torch.bool)

    def loss_sum():
        logits = peft(tokens).logits[0, :-1]
        ce = torch.nn.functional.cross_entropy(logits, tokens[0, 1:], reduction="none")
        return ce[scored].sum(), int(scored.sum())

    def layout(get):
        out = []
        for t, a, b in params:
            ga, gb = get(a), get(b)
            if t["role"] in heads:
                gb = permute(gb, heads[t["role"]])
            out += ga.reshape(-1).tolist() + gb.reshape(-1).tolist()
        return out

    loss, n = loss_sum()
    loss.backward()
    result = {"loss": loss.item(), "scored": n, "grads": layout(lambda p: p.grad.detach())}
    # Each optimizer run starts from the job's parameters: steps of the mean loss over the scored tokens.
    weights = [w for _, a, b in params for w in (a, b)]
    start = [w.detach().clone() for w in weights]
    result["after"] = []
    for opt_job in job.get("optimizers", []):
        with torch.no_grad():
            for w, s in zip(weights, start):
                w.copy_(s)
        if opt_job["kind"] == "sgd":
            opt = torch.optim.SGD(weights, lr=opt_job["lr"])
        else:
            opt = torch.optim.AdamW(weights, lr=opt_job["lr"], betas=(0.9, 0.999), eps=1e-8, weight_decay=opt_job["weightDecay"])
        for _ in range(opt_job["steps"]):
            opt.zero_grad()
            loss, n = loss_sum()
            (loss / n).backward()
            opt.step()
        result["after"].append(layout(lambda p: p.detach()))
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
