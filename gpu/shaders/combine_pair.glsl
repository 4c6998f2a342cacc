// f16 activations: two f16 values of each input (the halves of a 32-bit word), or eight (a 16-byte
// word), combined by the kernel's combine(), rounded by round_f16 and packed again
// (unpackHalf2x16 widens exactly; packing a rounded value is exact). Included after the kernel's
// combine().
#ifdef ACT_F16
uint combine_pair(uint a2, uint b2) {
  const vec2 x = unpackHalf2x16(a2), z = unpackHalf2x16(b2);
  return packHalf2x16(vec2(round_f16(combine(x.x, z.x)), round_f16(combine(x.y, z.y))));
}

uvec4 combine_octet(uvec4 a8, uvec4 b8) {
  return uvec4(combine_pair(a8.x, b8.x), combine_pair(a8.y, b8.y), combine_pair(a8.z, b8.z), combine_pair(a8.w, b8.w));
}
#endif
