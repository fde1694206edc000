"""FLUX.2's prompt processor without torchvision.

transformers 5.24 cannot import `PixtralProcessor` unless torchvision is installed (its module
imports the torchvision image processor), and no lock of the project installs it.
`Flux2Pipeline` gives its processor images only to upsample the prompt, which `flux2` leaves
off; otherwise it renders the chat template over the system message and the prompt and
tokenizes the text. `PromptProcessor` is that text half of `PixtralProcessor`: the checkpoint's
tokenizer and chat template, the same token ids for a prompt; an image given to it fails.
"""

from __future__ import annotations

from transformers import AutoTokenizer, ProcessorMixin


class PromptProcessor(ProcessorMixin):
    """A tokenizer and its chat template (`PixtralProcessor` without its image processor)."""

    def __init__(self, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(tokenizer, chat_template=chat_template)


def load_processor(source: str) -> PromptProcessor:
    """The processor saved in the pipeline folder's `tokenizer/`: its tokenizer and chat
    template (the processor's, else the tokenizer's own; its image settings unused)."""
    where = {"subfolder": "tokenizer", "local_files_only": True}
    tokenizer = AutoTokenizer.from_pretrained(source, **where)
    template = PromptProcessor.get_processor_dict(source, **where)[0].get("chat_template")
    return PromptProcessor(tokenizer, chat_template=template or tokenizer.chat_template)


def recorded_as_checkpoint(pipe):
    """`pipe` with its processor recorded in its config (model_index.json) as a checkpoint
    names it, `transformers.PixtralProcessor`: a saved pipeline loads as a downloaded one."""
    pipe.register_to_config(tokenizer=("transformers", "PixtralProcessor"))
    return pipe
