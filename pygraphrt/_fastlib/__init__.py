"""Compiled fast-path extensions (cffi API mode), one per runtime binding: ``_<binding>``.

Built by ``python -m bindgen build-fast`` (never committed); loaded by
:mod:`pygraphrt._fast` when ``PYGRAPHRT_FAST`` is ``1`` or ``auto``.
"""
