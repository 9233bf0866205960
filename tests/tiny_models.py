"""Tiny, randomly initialised models saved the way released weights are, so tests load
them through the package's real loading code (nothing is downloaded)."""

import json
from pathlib import Path

import pytest

TINY_SAM = {"embed_dim": 32, "depth": 2, "num_heads": 2, "global_attn_indexes": [1], "image_size": 256}


def tiny_sam_checkpoint(folder: Path):
    """A Segment Anything model built with the package's own builder at a tiny size, saved
    as a checkpoint file: (encoder, path)."""
    torch = pytest.importorskip("torch", reason="the SAM segmenter needs the [natural] extra (torch)")
    pytest.importorskip("segment_anything", reason="the SAM segmenter needs the [natural] extra (segment-anything)")
    from vicogym.renderers.natural import SamEncoder, build_sam

    encoder = SamEncoder(**TINY_SAM)
    torch.manual_seed(0)
    path = Path(folder) / "tiny_sam.pth"
    torch.save(build_sam(encoder).state_dict(), path)
    return encoder, path


def tiny_ddpm(folder: Path) -> Path:
    """An unconditional DDPM for RePaint, saved with ``save_pretrained``."""
    torch = pytest.importorskip("torch", reason="the diffusers inpainters need the [natural] extra (torch)")
    diffusers = pytest.importorskip("diffusers", reason="the diffusers inpainters need the [natural] extra")
    torch.manual_seed(0)
    unet = diffusers.UNet2DModel(sample_size=32, in_channels=3, out_channels=3, layers_per_block=1,
                                 block_out_channels=(8, 16), down_block_types=("DownBlock2D", "DownBlock2D"),
                                 up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=8)
    path = Path(folder) / "ddpm"
    diffusers.RePaintPipeline(unet=unet, scheduler=diffusers.RePaintScheduler()).save_pretrained(path)
    return path


def tiny_stable_diffusion(folder: Path) -> Path:
    """A Stable Diffusion inpainting pipeline (UNet with 9 input channels, VAE, CLIP text
    encoder and a byte-level BPE tokenizer of letters), saved with ``save_pretrained``."""
    torch = pytest.importorskip("torch", reason="the diffusers inpainters need the [natural] extra (torch)")
    diffusers = pytest.importorskip("diffusers", reason="the diffusers inpainters need the [natural] extra")
    transformers = pytest.importorskip("transformers", reason="Stable Diffusion needs the [natural] extra "
                                                              "(transformers)")
    folder = Path(folder)
    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(
        sample_size=8, in_channels=9, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32, attention_head_dim=4, norm_num_groups=8)
    vae = diffusers.AutoencoderKL(block_out_channels=(16, 32), in_channels=3, out_channels=3, latent_channels=4,
                                  down_block_types=("DownEncoderBlock2D",) * 2,
                                  up_block_types=("UpDecoderBlock2D",) * 2, norm_num_groups=8, sample_size=16)
    text = transformers.CLIPTextModel(transformers.CLIPTextConfig(
        vocab_size=64, hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=4,
        max_position_embeddings=77, bos_token_id=0, eos_token_id=1, pad_token_id=1))
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for letter in "abcdefghijklmnopqrstuvwxyz":
        vocab[letter] = len(vocab)
        vocab[letter + "</w>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    tokenizer = transformers.CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=77)
    pipe = diffusers.StableDiffusionInpaintPipeline(vae=vae, text_encoder=text, tokenizer=tokenizer, unet=unet,
                                                    scheduler=diffusers.DDIMScheduler(steps_offset=1), safety_checker=None,
                                                    feature_extractor=None, requires_safety_checker=False)
    path = folder / "sd-inpaint"
    pipe.save_pretrained(path)
    return path
