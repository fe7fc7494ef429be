"""A transformers-style encoder called with `input_ids` and `attention_mask`, exported without `dynamic_shapes`.

Plain torch.export.export passes, and the program accepts only a batch of 2 and a sequence of 16:
both inputs share the batch and the sequence length, which torch can keep dynamic."""

import torch


class TinyEncoder(torch.nn.Module):
    def __init__(self, vocab: int = 1000, width: int = 32) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)

    def forward(self, input_ids, attention_mask):
        h = self.embed(input_ids)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        scores = q @ k.transpose(1, 2) / h.shape[-1] ** 0.5
        scores = scores.masked_fill(attention_mask[:, None, :] == 0, float("-inf"))
        return self.out(scores.softmax(-1) @ v)


input_ids = torch.randint(0, 1000, (2, 16))
attention_mask = torch.ones(2, 16, dtype=torch.long)
ep = torch.export.export(TinyEncoder(), (input_ids, attention_mask))
