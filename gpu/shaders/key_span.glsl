// The first cache position a query at `pos` sees (model::KeySpan::first): the start of its chunk
// of pc.chunk positions where the layer is chunked (Llama 4), of its window of pc.window where it
// slides, else 0. chunk-boundary-off-by-one (faults.glsl): a chunk also sees the key before it.
uint span_start(uint pos) {
  if (pc.chunk > 0u) {
    const uint start = pos - pos % pc.chunk;
    return planted(FAULT_ATTENTION_CHUNK_BOUNDARY) && start > 0u ? start - 1u : start;
  }
  return (pc.window > 0u && pos + 1u > pc.window) ? pos + 1u - pc.window : 0u;
}
