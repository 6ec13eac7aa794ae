"""The tiny built-in image VAE, whose latent channels carry the image's colour as a trained VAE's do.

A freshly initialised ``AutoencoderKL`` decodes every latent to near-grey noise: its GroupNorms
remove per-group means and its random convolutions scramble what is left, so moving a latent
channel by one unit moves the image's hue by under 0.01. No colour reward can then be learnt (the
policy gradient of ``prompt_color_match`` was pure noise, see ``bench/learn.py``). So after the
seeded random initialisation the decoder is *shaped*: every channel-mapping convolution becomes
the identity plus a small random part, the residual branches are scaled down, and one
normalisation group keeps the channels' relative means. Latent channels 0, 1, 2 then drive red,
green and blue (about +0.1 per half unit), and the random parts still give each image texture.
The encoder is never used by the trainer and stays random.
"""

from __future__ import annotations

import torch
from torch import nn

LATENT_CHANNELS = 4
RANDOM_PART = 0.1  # share of the seeded random weights kept next to the identity path


def vae_config(latent_size: int) -> dict:
    return {
        "in_channels": 3,
        "out_channels": 3,
        "down_block_types": ("DownEncoderBlock2D",) * 3,
        "up_block_types": ("UpDecoderBlock2D",) * 3,
        "block_out_channels": (8, 8, 8),
        "layers_per_block": 1,
        "latent_channels": LATENT_CHANNELS,
        "norm_num_groups": 1,
        "sample_size": latent_size * 4,
        "scaling_factor": 1.0,
        "shift_factor": 0.0,
    }


def build_colour_vae(latent_size: int) -> nn.Module:
    """A seeded ``AutoencoderKL`` (call under ``torch.manual_seed``) with its decoder shaped."""
    from diffusers import AutoencoderKL

    vae = AutoencoderKL(**vae_config(latent_size))
    shape_decoder(vae)
    return vae


@torch.no_grad()
def shape_decoder(vae: nn.Module) -> None:
    decoder = vae.decoder
    identity_plus_random(vae.post_quant_conv)
    identity_plus_random(decoder.conv_in)
    identity_plus_random(decoder.conv_out)
    for block in [*decoder.up_blocks, decoder.mid_block]:
        for resnet in block.resnets:
            resnet.conv2.weight.mul_(RANDOM_PART)
            resnet.conv2.bias.mul_(RANDOM_PART)
    for block in decoder.up_blocks:
        for upsampler in block.upsamplers or []:
            identity_plus_random(upsampler.conv)
    for attention in decoder.mid_block.attentions:
        attention.to_out[0].weight.mul_(RANDOM_PART)
        attention.to_out[0].bias.mul_(RANDOM_PART)


def identity_plus_random(conv: nn.Conv2d) -> None:
    """Channel c → channel c through the kernel's centre, plus RANDOM_PART of the random weights."""
    weight = conv.weight
    weight.mul_(RANDOM_PART)
    centre = weight.shape[-1] // 2
    for channel in range(min(weight.shape[0], weight.shape[1])):
        weight[channel, channel, centre, centre] += 1.0
    if conv.bias is not None:
        conv.bias.mul_(RANDOM_PART)
