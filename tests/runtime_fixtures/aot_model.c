/* Hand-written AOT-style model for the runtime tests: no graph executor, unpacked-style run.
 *   a: int32[4], b: float32[2,2]  ->  out0 = a * 3 + 1 (int32[4]), out1 = b * 0.5 (float32[2,2]) */
#include "byoc/runtime.h"

static const int64_t kShapeA[1] = {4};
static const int64_t kShapeB[2] = {2, 2};
static const ByocTensorInfo kInputs[] = {{"a", 1, kShapeA, {kDLInt, 32, 1}}, {"b", 2, kShapeB, {kDLFloat, 32, 1}}};
#ifdef BYOC_FIXTURE_BAD_OUTPUT /* a descriptor whose second output has no size (0-bit floats): refused */
#define OUT1_BITS 0
#else
#define OUT1_BITS 32
#endif
static const ByocTensorInfo kOutputs[] = {{"out0", 1, kShapeA, {kDLInt, 32, 1}},
                                          {"out1", 2, kShapeB, {kDLFloat, OUT1_BITS, 1}}};
static int g_ready;

static int32_t model_init(void) {
  g_ready = 1;
  return 0;
}

static int32_t tvmgen_default_run(void* const* inputs, void* const* outputs) {
  const int32_t* a = (const int32_t*)inputs[0];
  const float* b = (const float*)inputs[1];
  int32_t* o0 = (int32_t*)outputs[0];
  float* o1 = (float*)outputs[1];
  int i;
  if (!g_ready) {
    byoc_set_last_error("aot_fixture: run before init");
    return -1;
  }
  for (i = 0; i < 4; ++i) o0[i] = a[i] * 3 + 1;
  for (i = 0; i < 4; ++i) o1[i] = b[i] * 0.5f;
  return 0;
}

static void model_deinit(void) { g_ready = 0; }

static const ByocModelDesc kDesc = {"aot_fixture", "aot", "unpacked", 2, kInputs, 2, kOutputs, 0,
                                    model_init, tvmgen_default_run, model_deinit, NULL, NULL, NULL, NULL};

const ByocModelDesc* byoc_model_desc(void) { return &kDesc; }
