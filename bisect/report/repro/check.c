/* An op of an engine that tapdiff found wrong on its own inputs, as a test for the engine's suite
   (C99, no library but libm). case.safetensors holds one forward pass of the op: its inputs as the
   engine had them, the weights it reads, the reference's output on them (float64) and the
   engine's, and the tolerance. This calls repro_kernel() of kernel.c, where you call your engine's
   kernel, and holds its output to the tolerance with tapdiff's metrics.

     cc -O2 -o check check.c kernel.c -lm
     ./check                      your kernel, from kernel.c
     ./check --replay engine      the engine's recorded output: fails as tapdiff found
     ./check --replay reference   the reference's own output: passes
     ./check --case FILE          another case file than case.safetensors beside the working directory

   Exit 0: within the tolerance; 1: past it; 2: the case could not be run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repro.h"

static void die(const char* what, const char* detail) {
  fprintf(stderr, "check: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(2);
}

/* --- the safetensors header: a JSON object, read by a small parser ---------------------------- */

struct cursor {
  const char *p, *end;
};

static void skip_ws(struct cursor* c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) ++c->p;
}

static void expect(struct cursor* c, char ch) {
  skip_ws(c);
  if (c->p >= c->end || *c->p != ch) die("case header", "malformed JSON");
  ++c->p;
}

static int peek(struct cursor* c, char ch) {
  skip_ws(c);
  return c->p < c->end && *c->p == ch;
}

/* A JSON string, unescaped into a new buffer (\uXXXX of the basic plane as UTF-8). */
static char* parse_string(struct cursor* c) {
  expect(c, '"');
  size_t cap = (size_t)(c->end - c->p) + 1, n = 0;
  char* out = malloc(cap);
  if (!out) die("out of memory", NULL);
  while (c->p < c->end && *c->p != '"') {
    char ch = *c->p++;
    if (ch == '\\' && c->p < c->end) {
      char e = *c->p++;
      if (e == 'n')
        ch = '\n';
      else if (e == 't')
        ch = '\t';
      else if (e == 'r')
        ch = '\r';
      else if (e == 'b')
        ch = '\b';
      else if (e == 'f')
        ch = '\f';
      else if (e == 'u' && c->end - c->p >= 4) {
        char hex[5] = {c->p[0], c->p[1], c->p[2], c->p[3], 0};
        unsigned long u = strtoul(hex, NULL, 16);
        c->p += 4;
        if (u < 0x80) {
          ch = (char)u;
        } else if (u < 0x800) {
          out[n++] = (char)(0xc0 | (u >> 6));
          ch = (char)(0x80 | (u & 0x3f));
        } else {
          out[n++] = (char)(0xe0 | (u >> 12));
          out[n++] = (char)(0x80 | ((u >> 6) & 0x3f));
          ch = (char)(0x80 | (u & 0x3f));
        }
      } else
        ch = e;
    }
    out[n++] = ch;
  }
  expect(c, '"');
  out[n] = 0;
  return out;
}

static int64_t parse_integer(struct cursor* c) {
  skip_ws(c);
  char* stop = NULL;
  long long v = strtoll(c->p, &stop, 10);
  if (stop == c->p) die("case header", "expected an integer");
  c->p = stop;
  return (int64_t)v;
}

/* [n, n, ...] into values (at most max); returns the count. */
static int parse_integers(struct cursor* c, int64_t* values, int max) {
  int n = 0;
  expect(c, '[');
  while (!peek(c, ']')) {
    if (n == max) die("case header", "an array longer than expected");
    values[n++] = parse_integer(c);
    if (peek(c, ',')) ++c->p;
  }
  expect(c, ']');
  return n;
}

static void skip_value(struct cursor* c) {
  skip_ws(c);
  if (peek(c, '"')) {
    free(parse_string(c));
  } else if (peek(c, '{') || peek(c, '[')) {
    char close = *c->p == '{' ? '}' : ']';
    ++c->p;
    while (!peek(c, close)) {
      skip_value(c);
      if (peek(c, ':') || peek(c, ',')) ++c->p;
    }
    ++c->p;
  } else {
    while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']') ++c->p;
  }
}

/* --- loading the case ----------------------------------------------------------------------- */

static double element(const unsigned char* b, const char* dtype) {
  if (!strcmp(dtype, "F64")) {
    double v;
    memcpy(&v, b, 8);
    return v;
  }
  if (!strcmp(dtype, "F32")) {
    float v;
    memcpy(&v, b, 4);
    return v;
  }
  if (!strcmp(dtype, "I32")) {
    int32_t v;
    memcpy(&v, b, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, b, 8);
  return (double)v;
}

static size_t element_size(const char* dtype) {
  if (!strcmp(dtype, "F64") || !strcmp(dtype, "I64")) return 8;
  if (!strcmp(dtype, "F32") || !strcmp(dtype, "I32")) return 4;
  die("case header: an array of another type than F64, F32, I32, I64", dtype);
  return 0;
}

static void read_array(struct cursor* c, struct repro_array* a, const unsigned char* data, size_t data_size) {
  char* dtype = NULL;
  int64_t offsets[2] = {0, 0};
  expect(c, '{');
  while (!peek(c, '}')) {
    char* key = parse_string(c);
    expect(c, ':');
    if (!strcmp(key, "dtype"))
      dtype = parse_string(c);
    else if (!strcmp(key, "shape"))
      a->rank = parse_integers(c, a->shape, 4);
    else if (!strcmp(key, "data_offsets"))
      parse_integers(c, offsets, 2);
    else
      skip_value(c);
    free(key);
    if (peek(c, ',')) ++c->p;
  }
  expect(c, '}');
  if (!dtype) die("case header: an array without dtype", a->name);
  a->size = 1;
  for (int i = 0; i < a->rank; ++i) a->size *= a->shape[i];
  size_t size = element_size(dtype);
  if (offsets[0] < 0 || offsets[1] < offsets[0] || (size_t)offsets[1] > data_size ||
      (size_t)(offsets[1] - offsets[0]) != (size_t)a->size * size)
    die("case header: data_offsets do not match the shape", a->name);
  a->data = malloc((size_t)(a->size > 0 ? a->size : 1) * sizeof(double));
  if (!a->data) die("out of memory", NULL);
  for (int64_t i = 0; i < a->size; ++i) a->data[i] = element(data + offsets[0] + (size_t)i * size, dtype);
  free(dtype);
}

static void load(const char* path, struct repro_case* rc) {
  FILE* f = fopen(path, "rb");
  if (!f) die("cannot open", path);
  fseek(f, 0, SEEK_END);
  long total = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* bytes = malloc((size_t)(total > 0 ? total : 1));
  if (!bytes || total < 8 || fread(bytes, 1, (size_t)total, f) != (size_t)total) die("cannot read", path);
  fclose(f);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | bytes[i];
  if (length > (uint64_t)total - 8) die("not a safetensors file", path);
  struct cursor c = {(const char*)bytes + 8, (const char*)bytes + 8 + length};
  const unsigned char* data = bytes + 8 + length;
  size_t data_size = (size_t)total - 8 - (size_t)length;
  memset(rc, 0, sizeof *rc);
  rc->arrays = calloc(256, sizeof *rc->arrays);
  rc->meta_keys = calloc(256, sizeof(char*));
  rc->meta_values = calloc(256, sizeof(char*));
  if (!rc->arrays || !rc->meta_keys || !rc->meta_values) die("out of memory", NULL);
  expect(&c, '{');
  while (!peek(&c, '}')) {
    char* name = parse_string(&c);
    expect(&c, ':');
    if (!strcmp(name, "__metadata__")) {
      expect(&c, '{');
      while (!peek(&c, '}')) {
        if (rc->meta_count == 256) die("case header", "more than 256 metadata keys");
        rc->meta_keys[rc->meta_count] = parse_string(&c);
        expect(&c, ':');
        rc->meta_values[rc->meta_count++] = parse_string(&c);
        if (peek(&c, ',')) ++c.p;
      }
      expect(&c, '}');
    } else {
      if (rc->count == 256) die("case header", "more than 256 arrays");
      struct repro_array* a = &rc->arrays[rc->count++];
      snprintf(a->name, sizeof a->name, "%s", name);
      read_array(&c, a, data, data_size);
    }
    free(name);
    if (peek(&c, ',')) ++c.p;
  }
  free(bytes);
  const char *op = repro_meta(rc, "op"), *layer = repro_meta(rc, "layer");
  const struct repro_array* ref = repro_find(rc, "output.reference");
  if (!op || !layer || !ref || ref->rank != 2 || !repro_find(rc, "positions") ||
      repro_find(rc, "positions")->size != ref->shape[0])
    die("not a tapdiff repro case (op, layer, output.reference, positions)", path);
  rc->op = op;
  rc->layer = atoi(layer);
  rc->rows = ref->shape[0];
  rc->width = ref->shape[1];
}

const struct repro_array* repro_find(const struct repro_case* c, const char* name) {
  for (int i = 0; i < c->count; ++i)
    if (!strcmp(c->arrays[i].name, name)) return &c->arrays[i];
  return NULL;
}

const char* repro_meta(const struct repro_case* c, const char* key) {
  for (int i = 0; i < c->meta_count; ++i)
    if (!strcmp(c->meta_keys[i], key)) return c->meta_values[i];
  return NULL;
}

/* The metadata value for printing: "?" where the case lacks it. */
static const char* meta_text(const struct repro_case* c, const char* key) {
  const char* value = repro_meta(c, key);
  return value ? value : "?";
}

/* --- tapdiff's metrics (bisect/compare/metrics.cpp) and bounds -------------------------------- */

struct metrics {
  long nonfinite, nonfinite_both;
  double nmse, max_abs, max_rel, cosine;
};

/* b against the reference a over rows [first, first + rows) of width cols. */
static struct metrics measure(const double* a, const double* b, int64_t first, int64_t rows, int64_t cols) {
  struct metrics m = {0, 0, 0, 0, 0, 1};
  double err = 0, sq_a = 0, sq_b = 0, dot = 0;
  for (int64_t r = first; r < first + rows; ++r) {
    const double *ra = a + r * cols, *rb = b + r * cols;
    double row_sq = 0;
    for (int64_t i = 0; i < cols; ++i)
      if (isfinite(ra[i])) row_sq += ra[i] * ra[i];
    double row_rms = cols > 0 ? sqrt(row_sq / (double)cols) : 0;
    for (int64_t i = 0; i < cols; ++i) {
      double x = ra[i], y = rb[i];
      if (!isfinite(x) || !isfinite(y)) {
        int alike = (isnan(x) && isnan(y)) || (isinf(x) && x == y);
        ++*(alike ? &m.nonfinite_both : &m.nonfinite);
        continue;
      }
      double d = fabs(x - y), floor = fabs(x) > row_rms ? fabs(x) : row_rms;
      err += d * d, sq_a += x * x, sq_b += y * y, dot += x * y;
      if (floor > 0 && d / floor > m.max_rel) m.max_rel = d / floor;
      if (d > m.max_abs) m.max_abs = d;
    }
  }
  m.nmse = sq_a > 0 ? err / sq_a : (err > 0 ? INFINITY : 0);
  double norms = sqrt(sq_a) * sqrt(sq_b);
  m.cosine = norms > 0 ? dot / norms : (err == 0 ? 1 : 0);
  return m;
}

/* The bounds m breaks, written into text ("nmse 2.1e-03 > 1e-08; ..."); returns their count. */
static int violations(const struct repro_case* c, const struct metrics* m, char* text, size_t size) {
  static const char* const names[] = {"nmse", "max_abs", "max_rel", "cosine"};
  static const char* const keys[] = {"bound_nmse", "bound_max_abs", "bound_max_rel", "bound_min_cosine"};
  double values[] = {m->nmse, m->max_abs, m->max_rel, m->cosine};
  int n = 0;
  size_t used = 0;
  text[0] = 0;
  if (m->nonfinite > 0)
    used += (size_t)snprintf(text + used, size - used, "%snonfinite %ld", n++ ? "; " : "", m->nonfinite);
  if (m->nonfinite_both > 0 && used < size)
    used += (size_t)snprintf(text + used, size - used, "%snonfinite_both %ld", n++ ? "; " : "", m->nonfinite_both);
  for (int i = 0; i < 4 && used < size; ++i) {
    const char* bound_text = repro_meta(c, keys[i]);
    if (!bound_text) continue;
    double bound = strtod(bound_text, NULL);
    int above = i < 3, within = above ? values[i] <= bound : values[i] >= bound; /* NaN: never within */
    if (!within)
      used += (size_t)snprintf(text + used, size - used, "%s%s %.3g %s %.3g", n++ ? "; " : "", names[i], values[i],
                               above ? ">" : "<", bound);
  }
  return n;
}

int main(int argc, char** argv) {
  const char *replay = NULL, *path = "case.safetensors";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--replay") && i + 1 < argc &&
        (!strcmp(argv[i + 1], "engine") || !strcmp(argv[i + 1], "reference")))
      replay = argv[++i];
    else if (!strcmp(argv[i], "--case") && i + 1 < argc)
      path = argv[++i];
    else
      die("usage", "check [--replay engine|reference] [--case case.safetensors]");
  }
  struct repro_case rc;
  load(path, &rc);
  const struct repro_array* ref = repro_find(&rc, "output.reference");
  const struct repro_array* positions = repro_find(&rc, "positions");
  double* out;
  char source[64];
  if (replay) {
    const struct repro_array* recorded =
        repro_find(&rc, !strcmp(replay, "engine") ? "output.engine" : "output.reference");
    if (!recorded || recorded->size != ref->size)
      die("the case has no recorded output of the reference's shape", replay);
    out = recorded->data;
    snprintf(source, sizeof source, "the %s's recorded output", replay);
  } else {
    out = calloc((size_t)(ref->size > 0 ? ref->size : 1), sizeof(double));
    if (!out) die("out of memory", NULL);
    if (repro_kernel(&rc, out) != 0) return 2;
    snprintf(source, sizeof source, "kernel.c");
  }
  struct metrics m = measure(ref->data, out, 0, rc.rows, rc.width);
  char bad[512], row_text[512];
  int n_bad = violations(&rc, &m, bad, sizeof bad);
  int64_t row_bad = -1;
  for (int64_t r = 0; r < rc.rows && row_bad < 0; ++r) {
    struct metrics mr = measure(ref->data, out, r, 1, rc.width);
    if (violations(&rc, &mr, row_text, sizeof row_text) > 0) row_bad = r;
  }
  printf("%s/%s of %s: forward pass %s, %lld rows at positions %.0f..%.0f\n", meta_text(&rc, "layer"), rc.op,
         meta_text(&rc, "model"), meta_text(&rc, "pass"), (long long)rc.rows, positions->data[0],
         positions->data[positions->size - 1]);
  printf("tolerance: %s (%s)\n", meta_text(&rc, "tolerance"), meta_text(&rc, "tolerance_source"));
  printf("%s: nmse %.3g, max_abs %.3g, max_rel %.3g, cosine %.9f, nonfinite %ld\n", source, m.nmse, m.max_abs,
         m.max_rel, m.cosine, m.nonfinite);
  printf("tapdiff measured the engine's: nmse %.3g, max_abs %.3g\n", strtod(meta_text(&rc, "engine_nmse"), NULL),
         strtod(meta_text(&rc, "engine_max_abs"), NULL));
  if (n_bad == 0 && row_bad < 0) {
    printf("PASS: within the tolerance\n");
    return 0;
  }
  printf("FAIL: %s", n_bad ? bad : "a row past the tolerance");
  if (row_bad >= 0) printf("; first row past it alone: position %.0f", positions->data[row_bad]);
  printf("\n");
  return 1;
}
