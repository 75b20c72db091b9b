"""The other direction of the PEFT anchor: an adapter trained by PEFT, saved by PEFT, converted by
llama.cpp's own convert_lora_to_gguf.py.

Arguments: the GGUF base, a work folder, llama.cpp's source folder. Reads a JSON job on stdin (the
training and the evaluation token ids). Loads the base with transformers (float32), attaches a PEFT
LoraConfig with random A and B (init_lora_weights=False, torch seed 0), takes three SGD steps on the
training tokens, saves the adapter with save_pretrained, writes the base's config.json (all the
converter reads of the base), runs the converter to an F32 GGUF adapter, and prints JSON: the path
of that file and transformers + PEFT's log-probability of each next evaluation token.
"""
import json
import os
import subprocess
import sys

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoConfig, AutoModelForCausalLM


def main():
    gguf, work, llama_cpp = sys.argv[1], sys.argv[2], sys.argv[3]
    job = json.load(sys.stdin)
    cfg = AutoConfig.from_pretrained(os.path.dirname(gguf), gguf_file=os.path.basename(gguf))
    cfg.pad_token_id = None  # stories260K's pad id lies outside its vocabulary; it pads nothing here
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(gguf), gguf_file=os.path.basename(gguf), config=cfg, torch_dtype=torch.float32)
    torch.manual_seed(0)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    peft = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=targets, lora_dropout=0.0, init_lora_weights=False))
    train = torch.tensor([job["train"]])
    opt = torch.optim.SGD([p for p in peft.parameters() if p.requires_grad], lr=0.05)
    for _ in range(3):
        opt.zero_grad()
        logits = peft(train).logits[0, :-1]
        torch.nn.functional.cross_entropy(logits, train[0, 1:]).backward()
        opt.step()
    adapter_dir, base_dir = os.path.join(work, "adapter"), os.path.join(work, "base")
    peft.save_pretrained(adapter_dir)
    cfg.architectures = ["LlamaForCausalLM"]
    cfg.save_pretrained(base_dir)
    out = os.path.join(work, "peft-lora.gguf")
    env = {**os.environ, "PYTHONPATH": os.path.join(llama_cpp, "gguf-py")}
    subprocess.run(
        [sys.executable, os.path.join(llama_cpp, "convert_lora_to_gguf.py"), "--base", base_dir, "--outfile", out, "--outtype", "f32", adapter_dir],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    ev = torch.tensor([job["eval"]])
    with torch.no_grad():
        lp = torch.log_softmax(peft(ev).logits[0, :-1].double(), dim=-1)
    logprobs = lp.gather(1, ev[0, 1:].unsqueeze(1)).squeeze(1).tolist()
    json.dump({"adapter": out, "logprobs": logprobs}, sys.stdout)


if __name__ == "__main__":
    main()
