// The vector of a portable nchwc kernel (see ../nchwc.hpp): `b` floats in plain loops, which
// the compiler vectorizes for whatever the build targets. Included inside namespaces generic8
// and generic16 (no include guard on purpose); expects `b` there.

inline constexpr int conv_f = 1, conv_acc = 4;
struct vec {
  float v[b];
};
inline vec vzero() { return vec{}; }
inline vec vset1(float x) {
  vec r;
  for (i64 i = 0; i < b; ++i) r.v[i] = x;
  return r;
}
inline vec vload(const float* p) {
  vec r;
  for (i64 i = 0; i < b; ++i) r.v[i] = p[i];
  return r;
}
inline void vstore(float* p, const vec& x) {
  for (i64 i = 0; i < b; ++i) p[i] = x.v[i];
}
inline vec vbcast(const float* p) { return vset1(*p); }
inline vec vfma(const vec& a, const vec& x, vec acc) {
  for (i64 i = 0; i < b; ++i) acc.v[i] += a.v[i] * x.v[i];
  return acc;
}
inline vec vadd(vec a, const vec& x) {
  for (i64 i = 0; i < b; ++i) a.v[i] += x.v[i];
  return a;
}
inline vec vsub(vec a, const vec& x) {
  for (i64 i = 0; i < b; ++i) a.v[i] -= x.v[i];
  return a;
}
inline vec vmul(vec a, const vec& x) {
  for (i64 i = 0; i < b; ++i) a.v[i] *= x.v[i];
  return a;
}
// max / min as x86's maxps / minps: the second operand when either is NaN (the kernels put
// the accumulator second, so a NaN input is kept as it propagates through max pooling)
inline vec vmax(vec a, const vec& x) {
  for (i64 i = 0; i < b; ++i) a.v[i] = a.v[i] > x.v[i] ? a.v[i] : x.v[i];
  return a;
}
inline vec vmin(vec a, const vec& x) {
  for (i64 i = 0; i < b; ++i) a.v[i] = a.v[i] < x.v[i] ? a.v[i] : x.v[i];
  return a;
}
