"""The ``builtin:ocr`` prompt set: text-rendering prompts in flow_grpo's OCR format, the text to draw in double
quotes (flow_grpo's dataset/ocr/train.txt writes its prompts the same way). The ``ocr`` reward scores an image by
how well it shows the quoted text."""

from __future__ import annotations

OCR_PROMPTS = (
    'a shop sign that says "Open Late"',
    'a chalkboard menu reading "Soup of the Day"',
    'a coffee mug printed with "Good Morning"',
    'a street sign that says "Maple Avenue"',
    'a birthday cake with "Happy Birthday Ada" written in icing',
    'a neon sign glowing "Night Owl"',
    'a book cover titled "The Quiet Garden"',
    'a road sign that reads "Slow Down"',
    'a poster announcing "Summer Fair 2026"',
    'a t-shirt printed with "Hello World"',
    'a wooden door sign saying "Please Knock"',
    'a bottle label that reads "Fresh Lemonade"',
)
