"""The lab's stand-in for SGLang: `python -m sglang_sim` in place of `python -m sglang.launch_server`."""
