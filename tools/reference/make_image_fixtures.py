#!/usr/bin/env python3
"""Builds tests/fixtures/images/: small PNG, JPEG and WebP files in every mode the decoders handle,
each next to NAME.rgb, the 8-bit RGB bytes the reference loader gives for it (Transformers'
load_image: PIL.ImageOps.exif_transpose, then convert("RGB")), and expected.json listing
{file, width, height, tolerance} per image. Files Pillow cannot write (2- and 4-bit gray, Adam7
interlacing, 16-bit gray with tRNS) come from the small PNG writer below; PIL still decodes them
for the expected pixels. Also writes broken files (bad.json: what each must be refused for) and the
image fuzz seeds in tests/fuzz/corpus/media. Deterministic. Run:  python3 tools/reference/make_image_fixtures.py
"""
import base64
import io
import json
import pathlib
import random
import struct
import zlib

from PIL import Image, ImageOps

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "images"
CORPUS = ROOT / "tests" / "fuzz" / "corpus" / "media"
WIDTH, HEIGHT = 13, 7  # odd on purpose: chroma subsampling, bit packing and Adam7 passes all have remainders

rng = random.Random(20)


def pattern(mode, width=WIDTH, height=HEIGHT):
    """A smooth gradient with some noise: JPEG stays close to it, every channel differs."""
    image = Image.new("RGBA", (width, height))
    for y in range(height):
        for x in range(width):
            image.putpixel((x, y), ((x * 19 + rng.randrange(8)) % 256, (y * 37 + rng.randrange(8)) % 256,
                                    (x * y * 5 + 40) % 256, (x * 23 + y * 11) % 256))
    return image.convert(mode) if mode != "RGBA" else image


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def pack_row(samples, depth):
    if depth == 8:
        return bytes(samples)
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    out, accumulator, bits = bytearray(), 0, 0
    for s in samples:
        accumulator = (accumulator << depth) | s
        bits += depth
        if bits == 8:
            out.append(accumulator)
            accumulator, bits = 0, 0
    if bits:
        out.append(accumulator << (8 - bits))
    return bytes(out)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def write_png(rows, color_type, depth, interlace=False, palette=None, trns=None, exif=None):
    """rows: a list of rows, each a list of pixels, each a tuple of samples."""
    height, width = len(rows), len(rows[0])
    raw = bytearray()
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        for y in range(y0, height, dy):
            line = [sample for x in range(x0, width, dx) for sample in rows[y][x]]
            if line:
                raw += b"\0" + pack_row(line, depth)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0,
                                                            1 if interlace else 0))
    if palette is not None:
        png += chunk(b"PLTE", bytes(c for rgb in palette for c in rgb))
    if trns is not None:
        png += chunk(b"tRNS", trns)
    if exif is not None:
        png += chunk(b"eXIf", exif)
    return png + chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b"")


def exif_with_orientation(orientation, big_endian=False):
    exif = Image.Exif()
    exif[0x0112] = orientation
    data = exif.tobytes()
    if big_endian:  # the same IFD written Motorola-order by hand
        data = b"Exif\0\0MM\0*" + struct.pack(">I", 8) + struct.pack(">H", 1) + struct.pack(">HHIHH", 0x0112, 3, 1,
                                                                                            orientation, 0) + b"\0\0\0\0"
    return data


def pil_save(image, fmt, **options):
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def files():
    rgba = pattern("RGBA")
    rgb = rgba.convert("RGB")
    gray = rgba.convert("L")
    yield "rgb8.png", pil_save(rgb, "PNG"), 0
    yield "rgba8.png", pil_save(rgba, "PNG"), 0
    yield "gray8.png", pil_save(gray, "PNG"), 0
    yield "gray1.png", pil_save(gray.convert("1"), "PNG"), 0
    yield "gray8_trns.png", pil_save(gray, "PNG", transparency=40), 0
    yield "la8.png", pil_save(rgba.convert("LA"), "PNG"), 0
    palette = rgb.quantize(colors=60)
    yield "palette8.png", pil_save(palette, "PNG"), 0
    yield "palette8_trns.png", pil_save(palette, "PNG", transparency=bytes(range(0, 240, 4))), 0
    yield "palette4.png", pil_save(rgb.quantize(colors=12), "PNG", bits=4), 0
    pixels = [[rgba.getpixel((x, y)) for x in range(WIDTH)] for y in range(HEIGHT)]
    wide = lambda v: v * 257 + (v % 7)  # noqa: E731 - low bytes that must be ignored
    yield "gray2.png", write_png([[(p[0] >> 6,) for p in row] for row in pixels], 0, 2), 0
    yield "gray4.png", write_png([[(p[1] >> 4,) for p in row] for row in pixels], 0, 4), 0
    yield "rgb16.png", write_png([[tuple(wide(v) for v in p[:3]) for p in row] for row in pixels], 2, 16), 0
    yield "rgba16.png", write_png([[tuple(wide(v) for v in p) for p in row] for row in pixels], 6, 16), 0
    yield "la16.png", write_png([[(wide(p[0]), wide(p[3])) for p in row] for row in pixels], 4, 16), 0
    # 16-bit gray samples around 255, where PIL's I;16 → RGB conversion clips.
    yield "gray16.png", write_png([[((p[0] * 2 + p[1]) % 600,) for p in row] for row in pixels], 0, 16,
                                  trns=struct.pack(">H", 300)), 0
    yield "rgb8_adam7.png", write_png([[p[:3] for p in row] for row in pixels], 2, 8, interlace=True), 0
    yield "rgba16_adam7.png", write_png([[tuple(wide(v) for v in p) for p in row] for row in pixels], 6, 16,
                                        interlace=True), 0
    palette_rows = [[(palette.getpixel((x, y)),) for x in range(WIDTH)] for y in range(HEIGHT)]
    palette_colors = [tuple(palette.getpalette()[3 * i:3 * i + 3]) for i in range(60)]
    yield "palette8_adam7.png", write_png(palette_rows, 3, 8, interlace=True, palette=palette_colors), 0
    yield "rgb8_exif6.png", write_png([[p[:3] for p in row] for row in pixels], 2, 8,
                                      exif=exif_with_orientation(6)[6:]), 0

    yield "baseline420.jpg", pil_save(rgb, "JPEG", quality=90), 0
    yield "baseline444.jpg", pil_save(rgb, "JPEG", quality=90, subsampling=0), 0
    yield "baseline422.jpg", pil_save(rgb, "JPEG", quality=90, subsampling=1), 0
    yield "gray.jpg", pil_save(gray, "JPEG", quality=90), 0
    yield "progressive.jpg", pil_save(rgb, "JPEG", quality=85, progressive=True), 0
    yield "cmyk.jpg", pil_save(rgb.convert("CMYK"), "JPEG", quality=95), 0
    for orientation in range(1, 9):
        yield f"exif{orientation}.jpg", pil_save(rgb, "JPEG", quality=90, exif=exif_with_orientation(orientation)), 0
    yield "exif6_motorola.jpg", pil_save(rgb, "JPEG", quality=90, exif=exif_with_orientation(6, big_endian=True)), 0

    yield "lossy.webp", pil_save(rgb, "WEBP", quality=80), 0
    transparent = rgba.copy()
    transparent.putpixel((0, 0), (200, 100, 50, 0))
    yield "lossless_alpha.webp", pil_save(transparent, "WEBP", lossless=True, exact=True), 0
    yield "exif8.webp", pil_save(rgb, "WEBP", lossless=True, exif=exif_with_orientation(8)), 0
    second = Image.new("RGB", (WIDTH, HEIGHT), (9, 9, 9))
    yield "animated.webp", pil_save(rgb, "WEBP", lossless=True, save_all=True, append_images=[second], duration=50), 0


def png_claiming(width, height):
    """A PNG whose header claims this size; its image data, a few zeros, would inflate without end."""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(bytes(4096), 9)) + chunk(b"IEND", b""))


def jpeg_claiming(width, height):
    """A baseline JPEG whose SOF0 claims this size; its scan data is that of a 13x7 image."""
    data = bytearray(pil_save(pattern("RGB"), "JPEG", quality=90))
    at = data.index(b"\xff\xc0")
    data[at + 5:at + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def bad_files():
    good_png = pil_save(pattern("RGB"), "PNG")
    good_jpeg = pil_save(pattern("RGB"), "JPEG", quality=90)
    good_webp = pil_save(pattern("RGB"), "WEBP", quality=80)
    corrupt_png = bytearray(good_png)
    idat = corrupt_png.index(b"IDAT")
    corrupt_png[idat + 8:idat + 16] = b"\x00" * 8
    yield "bomb.png", png_claiming(100_000, 100_000), "100000x100000 pixels"
    yield "bomb.jpg", jpeg_claiming(60_000, 60_000), "60000x60000 pixels"
    yield "truncated.png", good_png[:len(good_png) // 2], "PNG data is invalid"
    yield "corrupt.png", bytes(corrupt_png), "PNG data is invalid"
    yield "truncated.jpg", good_jpeg[:len(good_jpeg) // 2], "JPEG data is truncated"
    yield "truncated.webp", good_webp[:len(good_webp) // 2], "WebP"
    yield "not_image.gif", pil_save(pattern("RGB"), "GIF"), "not a PNG, JPEG or WebP file"
    yield "empty_png_signature.png", b"\x89PNG\r\n\x1a\n", "PNG data is invalid"


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    CORPUS.mkdir(parents=True, exist_ok=True)
    expected = []
    for name, data, tolerance in files():
        (OUT / name).write_bytes(data)
        reference = ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB")
        (OUT / (name + ".rgb")).write_bytes(reference.tobytes())
        expected.append({"file": name, "width": reference.width, "height": reference.height,
                         "tolerance": tolerance})
        (CORPUS / name).write_bytes(data)
    bad = []
    for name, data, reason in bad_files():
        (OUT / name).write_bytes(data)
        bad.append({"file": name, "reason": reason})
        (CORPUS / name).write_bytes(data)
    # Request bodies carrying images in every form, for the intake half of fuzz_media.
    png = base64.b64encode((OUT / "rgb8.png").read_bytes()).decode()
    jpeg = base64.b64encode((OUT / "exif6.jpg").read_bytes()).decode()
    question = {"q": {"type": "noul", "instructions": "Red? photo"}}
    seeds = {
        "request_images.json": {"state": "s", "questions": question, "images": [png, "data:image/jpeg;base64," + jpeg]},
        "request_assets.json": {"state": "see <image:0123456789abcdef0123456789abcdef>", "questions": question,
                                "assets": {"photo": {"type": "image", "format": "png", "data_base64": png},
                                           "<image:0123456789abcdef0123456789abcdef>": {"type": "image", "part": "asset-0"}}},
        "request_state_parts.json": {"state": ["s", {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png}},
                                               {"type": "input_image", "image_url": "data:image/jpeg;base64," + jpeg}],
                                     "questions": question},
        "decisions_input_image.json": {"input": [{"role": "user", "content": [
            {"type": "input_text", "text": "s"}, {"type": "input_image", "image_url": "data:image/png;base64," + png}]}],
            "questions": [{"type": "predicate", "instructions": "Red?"}]},
    }
    for name, body in seeds.items():
        (CORPUS / name).write_text(json.dumps(body, separators=(",", ":")))
    with open(OUT / "expected.json", "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    with open(OUT / "bad.json", "w") as f:
        json.dump(bad, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
