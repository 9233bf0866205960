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
                                                    scheduler=diffusers.DDIMScheduler(steps_offset=1),
                                                    safety_checker=None, feature_extractor=None,
                                                    requires_safety_checker=False)
    path = folder / "sd-inpaint"
    pipe.save_pretrained(path)
    return path


def tiny_image_text_to_text(folder: Path) -> Path:
    """A LLaVA-style image-text-to-text model (a CLIP vision tower and a Llama decoder of a
    few thousand weights) with its processor: a word-level tokenizer trained here on a few
    words, a CLIP image processor and a chat template; saved with ``save_pretrained``."""
    torch = pytest.importorskip("torch", reason="the local actor needs the [natural] extra (torch)")
    transformers = pytest.importorskip("transformers",
                                       reason="the local actor needs the [natural] extra (transformers)")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    words = ["what is the answer yes no one two three four red blue green how many bars are there with a single "
             "word or number"]
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(words, trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<s>", "</s>",
                                                                                  "<image>"]))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<pad>",
                                                bos_token="<s>", eos_token="</s>")
    template = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<image> {% else %}"
                "{{ c['text'] }} {% endif %}{% endfor %}{% endfor %}{% if add_generation_prompt %}answer {% endif %}")
    size, patch = 28, 14
    config = transformers.LlavaConfig(
        vision_config=transformers.CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                    num_attention_heads=2, image_size=size, patch_size=patch),
        text_config=transformers.LlamaConfig(vocab_size=len(fast), hidden_size=16, intermediate_size=32,
                                             num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=128, pad_token_id=fast.pad_token_id,
                                             bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id),
        image_token_index=fast.convert_tokens_to_ids("<image>"), vision_feature_select_strategy="default",
        vision_feature_layer=-1)
    torch.manual_seed(0)
    path = Path(folder) / "tiny-vlm"
    transformers.LlavaForConditionalGeneration(config).save_pretrained(path)
    transformers.LlavaProcessor(
        image_processor=transformers.CLIPImageProcessor(size={"shortest_edge": size},
                                                        crop_size={"height": size, "width": size}),
        tokenizer=fast, patch_size=patch, vision_feature_select_strategy="default", image_token="<image>",
        chat_template=template, num_additional_image_tokens=1).save_pretrained(path)
    return path
