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


#: Qwen2-VL's special tokens, in Qwen's order; the tool-call tags are plain added tokens
QWEN_VL_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                   "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                   "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>")
QWEN_VL_ADDED = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")
#: what the tiny tokenizer's merges are learned from: chat turns, tool calls and JSON
_CORPUS = ('system\nYou are a helpful assistant.\nuser\nassistant\n<tool_call>\n'
           '{"name": "zoom", "arguments": {"image": 0, "regions": [{"x0": 0.1, "y0": 0.2, "x1": 0.4, "y1": 0.3}]}}'
           '\n</tool_call>',
           '{"type": "function", "function": {"name": "answer", "description": "Give the final answer; it ends the '
           'task.", "parameters": {"type": "object", "properties": {"answer": {"type": "string", "description": '
           '"the answer"}}, "required": ["answer"]}}}',
           "What is the value of the bar? How many objects are there? Answer with a single word or number. The "
           "structure (JSON) of the chart: table rows series values title labels spec style colors gridlines legend. "
           "Reply with the next edit as JSON. The edit was accepted; the pass rate of the actor is 0.50. image unit "
           "pixels scale left steps zooms notes images sheet units of the task's pool question answer contract")


def chat_template() -> str:
    """Qwen's multimodal chat template with hermes tool calls, as TRL ships it (TRL parses
    tool calls out of the templates it knows; verl's hermes parser reads the same tags)."""
    pytest.importorskip("trl", reason="the tiny Qwen2-VL takes its chat template from the [trainers] extra (trl)")
    from trl.chat_template_utils import qwen3_vl_chat_template

    return qwen3_vl_chat_template


def tiny_qwen2_vl(folder: Path, words: tuple[str, ...] = (), tokens: tuple[str, ...] = ()) -> Path:
    """A Qwen2-VL (``model_type`` ``qwen2_vl``: a one-block vision tower and a one-layer
    decoder of hidden size 64, randomly initialised) with its processor, saved with
    ``save_pretrained`` into ``folder`` (returned), so ``AutoProcessor``,
    ``AutoTokenizer`` and ``AutoModelForImageTextToText`` load it offline. The tokenizer
    is byte-level BPE learned here on a few chat turns (every text encodes), with
    Qwen2-VL's special tokens; the image processor keeps images within 4 to 64 patches
    of 28 x 28 pixels; the chat template is Qwen's multimodal one with hermes tool calls
    (``<tool_call>{json}</tool_call>``, tool results as role ``tool``, the tools in the
    system prompt), the one TRL knows as Qwen3-VL's. ``words`` are learned as whole tokens
    besides (each is a line of the tokenizer's corpus); ``tokens`` are added as they are
    (a token may be a whole reply)."""
    pytest.importorskip("torch", reason="the tiny Qwen2-VL needs torch")
    transformers = pytest.importorskip("transformers", reason="the tiny Qwen2-VL needs transformers")
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    template = chat_template()

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(_CORPUS + tuple(words), trainers.BpeTrainer(
        vocab_size=640, special_tokens=list(QWEN_VL_SPECIAL), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None,
        additional_special_tokens=list(QWEN_VL_SPECIAL[1:]), padding_side="left", model_max_length=32768,
        clean_up_tokenization_spaces=False)
    fast.add_tokens(list(QWEN_VL_ADDED) + list(tokens))
    ids = {name: fast.convert_tokens_to_ids(name) for name in QWEN_VL_SPECIAL}
    head_dim = 16  # 4 heads of 16: the rotary half (8) splits into temporal, height, width sections
    config = transformers.Qwen2VLConfig(
        text_config={"vocab_size": len(fast), "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
                     "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32768,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
                     "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
                     "pad_token_id": ids["<|endoftext|>"], "tie_word_embeddings": False},
        vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "mlp_ratio": 2,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "in_channels": 3},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False)
    assert config.text_config.hidden_size // config.text_config.num_attention_heads == head_dim
    torch.manual_seed(0)
    model = transformers.Qwen2VLForConditionalGeneration(config)
    model.generation_config = transformers.GenerationConfig(
        eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]], pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"], do_sample=True, temperature=1.0, top_k=0, top_p=1.0)
    model.save_pretrained(folder)
    image_processor = transformers.Qwen2VLImageProcessor(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 64)
    processor = transformers.Qwen2VLProcessor(image_processor=image_processor, tokenizer=fast,
                                              video_processor=transformers.Qwen2VLVideoProcessor(),
                                              chat_template=template)
    processor.save_pretrained(folder)
    fast.save_pretrained(folder)  # the tokenizer alone (AutoTokenizer) reads the same chat template
    return folder


def tiny_yes_no_qwen2_vl(folder: Path, strength: float = 50.0) -> Path:
    """A tiny Qwen2-VL (:func:`tiny_qwen2_vl`, with ``Yes`` and ``No`` as tokens) whose
    replies are ``Yes`` or ``No`` about half the time each (:func:`answer_with`)."""
    folder = tiny_qwen2_vl(folder, words=("Yes", "No"))
    return answer_with(folder, ("Yes", "No"), strength)


#: two chart edits, each valid on any chart (one of them changes its gridlines)
GRIDLINE_EDITS = ('{"ops": [{"op": "set_style", "gridlines": false}]}',
                  '{"ops": [{"op": "set_style", "gridlines": true}]}')


def tiny_edit_rewriter(folder: Path, strength: float = 50.0) -> Path:
    """A tiny Qwen2-VL rewriter whose replies are one of :data:`GRIDLINE_EDITS` (each an
    added token) about half the time each (:func:`answer_with`): every proposal is an edit
    the chart arm can take, so its episodes make samples and its rounds export edits."""
    folder = tiny_qwen2_vl(folder, tokens=GRIDLINE_EDITS)
    return answer_with(folder, GRIDLINE_EDITS, strength)


def answer_with(folder: Path, replies: tuple[str, ...], strength: float = 50.0) -> Path:
    """Make the model saved in ``folder`` reply with one of ``replies`` (each one token of
    its tokenizer), about equally often, then end its turn: every other token's embedding
    leans on one dimension and the replies' on another; the final norm keeps only those
    two, and the head maps the first to the replies and the second to ``<|im_end|>``. The
    rest of the network is the random one, so what training changes (the head, the norm,
    the layer) moves the odds between the replies: a yes/no question's reward varies
    between completions from the first step, as GRPO needs."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    ids = [tokenizer.convert_tokens_to_ids(w) for w in replies]
    assert all(tokenizer.encode(w) == [i] for w, i in zip(replies, ids)), f"{replies} are not tokens"
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model = transformers.Qwen2VLForConditionalGeneration.from_pretrained(folder)
    text = model.model.language_model
    with torch.no_grad():
        embed = text.embed_tokens.weight
        embed[:, 0] = strength
        embed[ids, 0] = 0.0
        embed[ids, 1] = strength
        text.norm.weight.zero_()
        text.norm.weight[:2] = 1.0
        head = model.lm_head.weight
        head.zero_()
        head[:, :2] = -1.0
        head[ids, 0] = 1.0
        head[end, 1] = 1.0
    model.save_pretrained(folder)
    return folder
