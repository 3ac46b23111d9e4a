# generation speed with llama.cpp's own greedy sampler (C), no per-token Python logits copy
import ctypes, time, json, sys
import llama_cpp as L
from labkit.llm.native import open_llama
ngl = int(sys.argv[1])
llm = open_llama("/tmp/g/gemma.gguf", n_gpu_layers=ngl, n_ctx=2048, n_threads=16, n_threads_batch=16, verbose=False)
ctx, model = llm._ctx.ctx, llm._model.model
vocab = L.llama_model_get_vocab(model)
smpl = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
L.llama_sampler_chain_add(smpl, L.llama_sampler_init_greedy())
prompt = llm.tokenize(b"The history of the printing press begins", add_bos=True)
out = []
for run in range(4):
    L.llama_memory_clear(L.llama_get_memory(ctx), True)
    arr = (L.llama_token * len(prompt))(*prompt)
    L.llama_decode(ctx, L.llama_batch_get_one(arr, len(prompt)))
    n, t0 = 0, time.perf_counter()
    for _ in range(256):
        tok = L.llama_sampler_sample(smpl, ctx, -1)
        one = (L.llama_token * 1)(tok)
        if L.llama_decode(ctx, L.llama_batch_get_one(one, 1)) != 0: break
        n += 1
    out.append(n / (time.perf_counter() - t0))
print(json.dumps({"n_gpu_layers": ngl, "gen_tokens_per_s_runs": out[1:], "warmup": out[0]}))
