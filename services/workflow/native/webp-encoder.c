/*
 * One RGB frame to WebP in this process, through Google's libwebp 1.6.0
 * release (the static libraries the webp-converter package ships beside its
 * cwebp), configured as cwebp is for a PPM picture: the default preset, the
 * quality, the method, `lossless`, nothing else. The reference's Pillow runs
 * the same encoder in its own process, warm; cwebp paid a process start and
 * its page faults for every picture (workflow README, issue 29).
 *
 *   encode(rgb: Uint8Array, width, height, lossless: boolean, quality, method): Promise<Buffer>
 *   version(): number   libwebp's encoder version, 0xMMmmpp
 *
 * The encode runs on libuv's thread pool: the calling thread (the execution
 * thread) keeps serving its messages meanwhile. The input is held by a
 * reference until the work ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <node_api.h>
#include <webp/encode.h>

#define CHECK(env, call)                                                     \
  do {                                                                       \
    if ((call) != napi_ok) {                                                 \
      napi_throw_error((env), NULL, "webp-encoder: N-API call failed");      \
      return NULL;                                                           \
    }                                                                        \
  } while (0)

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref input_ref;
  const uint8_t* rgb;
  int width, height, lossless, method;
  float quality;
  /* Out. */
  WebPMemoryWriter writer;
  int error;          /* a WebPEncodingError, or -1 for a refused configuration */
} Job;

static void Execute(napi_env env, void* data) {
  (void)env;
  Job* job = (Job*)data;
  WebPConfig config;
  WebPPicture pic;
  WebPMemoryWriterInit(&job->writer);
  if (!WebPConfigInit(&config) || !WebPPictureInit(&pic)) {
    job->error = -1;
    return;
  }
  config.lossless = job->lossless;
  config.quality = job->quality;
  config.method = job->method;
  if (!WebPValidateConfig(&config)) {
    job->error = -1;
    return;
  }
  /* As cwebp: ARGB for lossless, the picture imported straight into YUV for lossy. */
  pic.use_argb = job->lossless ? 1 : 0;
  pic.width = job->width;
  pic.height = job->height;
  pic.writer = WebPMemoryWrite;
  pic.custom_ptr = &job->writer;
  if (!WebPPictureImportRGB(&pic, job->rgb, job->width * 3)) {
    job->error = pic.error_code ? (int)pic.error_code : (int)VP8_ENC_ERROR_OUT_OF_MEMORY;
    WebPPictureFree(&pic);
    return;
  }
  if (!WebPEncode(&config, &pic)) job->error = pic.error_code ? (int)pic.error_code : -1;
  WebPPictureFree(&pic);
}

static void Complete(napi_env env, napi_status status, void* data) {
  Job* job = (Job*)data;
  napi_value result;
  if (status == napi_ok && job->error == 0 && napi_create_buffer_copy(env, job->writer.size, job->writer.mem, NULL, &result) == napi_ok) {
    napi_resolve_deferred(env, job->deferred, result);
  } else {
    char text[96];
    napi_value message, err;
    if (status != napi_ok) snprintf(text, sizeof text, "webp-encoder: the encode was cancelled");
    else if (job->error == -1) snprintf(text, sizeof text, "webp-encoder: libwebp refused the configuration");
    else snprintf(text, sizeof text, "webp-encoder: libwebp failed with error %d", job->error);
    napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &message);
    napi_create_error(env, NULL, message, &err);
    napi_reject_deferred(env, job->deferred, err);
  }
  WebPMemoryWriterClear(&job->writer);
  napi_delete_reference(env, job->input_ref);
  napi_delete_async_work(env, job->work);
  free(job);
}

static napi_value Throw(napi_env env, const char* message) {
  napi_throw_range_error(env, NULL, message);
  return NULL;
}

static napi_value Encode(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 6) return Throw(env, "webp-encoder: encode(rgb, width, height, lossless, quality, method)");
  bool is_typed = false;
  CHECK(env, napi_is_typedarray(env, argv[0], &is_typed));
  if (!is_typed) return Throw(env, "webp-encoder: rgb must be a Uint8Array");
  napi_typedarray_type type;
  size_t length;
  void* bytes;
  CHECK(env, napi_get_typedarray_info(env, argv[0], &type, &length, &bytes, NULL, NULL));
  if (type != napi_uint8_array) return Throw(env, "webp-encoder: rgb must be a Uint8Array");
  uint32_t width, height, method;
  double quality;
  bool lossless;
  if (napi_get_value_uint32(env, argv[1], &width) != napi_ok || napi_get_value_uint32(env, argv[2], &height) != napi_ok ||
      napi_get_value_bool(env, argv[3], &lossless) != napi_ok || napi_get_value_double(env, argv[4], &quality) != napi_ok ||
      napi_get_value_uint32(env, argv[5], &method) != napi_ok) {
    return Throw(env, "webp-encoder: width, height, quality and method are numbers, lossless a boolean");
  }
  if (width < 1 || height < 1 || width > WEBP_MAX_DIMENSION || height > WEBP_MAX_DIMENSION) return Throw(env, "webp-encoder: width and height must be 1-16383");
  if (!(quality >= 0 && quality <= 100) || method > 6) return Throw(env, "webp-encoder: quality must be 0-100 and method 0-6");
  if ((uint64_t)width * height * 3 > length) return Throw(env, "webp-encoder: rgb holds fewer than width * height * 3 bytes");

  Job* job = (Job*)calloc(1, sizeof(Job));
  if (!job) return Throw(env, "webp-encoder: out of memory");
  job->rgb = (const uint8_t*)bytes;
  job->width = (int)width;
  job->height = (int)height;
  job->lossless = lossless ? 1 : 0;
  job->quality = (float)quality;
  job->method = (int)method;
  napi_value promise, name;
  if (napi_create_reference(env, argv[0], 1, &job->input_ref) != napi_ok) {
    free(job);
    return Throw(env, "webp-encoder: could not hold the input");
  }
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "webp-encode", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, Execute, Complete, job, &job->work) != napi_ok) {
    napi_delete_reference(env, job->input_ref);
    free(job);
    return Throw(env, "webp-encoder: could not start the encode");
  }
  if (napi_queue_async_work(env, job->work) != napi_ok) {
    /* The promise is already made: settle it through the error path once, here. */
    napi_delete_async_work(env, job->work);
    napi_delete_reference(env, job->input_ref);
    free(job);
    return Throw(env, "webp-encoder: could not queue the encode");
  }
  return promise;
}

static napi_value Version(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value v;
  CHECK(env, napi_create_uint32(env, (uint32_t)WebPGetEncoderVersion(), &v));
  return v;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
    {"encode", NULL, Encode, NULL, NULL, NULL, napi_enumerable, NULL},
    {"version", NULL, Version, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, 2, props) != napi_ok) return NULL;
  return exports;
}
