/*
 * RGB frames to WebP in this process, through Google's libwebp 1.6.0
 * release (the static libraries the webp-converter package ships beside its
 * cwebp), configured as cwebp is for a PPM picture: the default preset, the
 * quality, the method, `lossless`, nothing else. The reference's Pillow runs
 * the same encoder in its own process, warm; cwebp paid a process start and
 * its page faults for every picture (workflow README, issue 29).
 *
 *   encode(rgb: Uint8Array, width, height, lossless: boolean, quality, method, stop?: Int32Array): Buffer
 *   encodeAnimation(frames: Uint8Array[], width, height, delayMs, lossless, quality, method, stop?: Int32Array): Buffer
 *   version(): number   libwebp's encoder version, 0xMMmmpp
 *
 * encodeAnimation runs libwebp's animation encoder (WebPAnimEncoder, as
 * img2webp and Pillow do) with Pillow's settings: key frames every 3-5
 * frames lossy and 9-17 lossless, no mixed mode, no minimize_size, loop 0,
 * background 0 (transparent black), each frame shown delayMs.
 *
 * An encode runs on the calling thread (the execution thread), as Pillow's
 * runs on the reference's: its memory is that thread's, reused from one
 * picture to the next. On libuv's thread pool, the few encodes of a fresh
 * server each landed on another thread whose memory was still to be faulted
 * in (lossy at method 6: ~130-160 ms of CPU a picture there, ~120 here).
 * A thread being terminated cannot leave native code: when `stop[0]`
 * (shared memory, raised by the thread that stops this one) becomes
 * non-zero, libwebp's progress hook ends the encode early, and it throws.
 */
#include <stdio.h>
#include <stdlib.h>
#include <node_api.h>
#include <limits.h>
#include <webp/encode.h>
#include <webp/mux.h>

#define CHECK(env, call)                                                     \
  do {                                                                       \
    if ((call) != napi_ok) {                                                 \
      napi_throw_error((env), NULL, "webp-encoder: N-API call failed");      \
      return NULL;                                                           \
    }                                                                        \
  } while (0)

/*
 * libwebpmux's animation encoder, built without -fPIC, refers to glibc's stderr directly (for its verbose messages,
 * which are off here): a stderr of this object's own, hidden and bound inside it (-Bsymbolic), lets it link into a
 * shared object. It is opened on file descriptor 2 when the object is loaded, should anything print after all.
 */
FILE* stderr;
__attribute__((constructor)) static void OpenStderr(void) {
  stderr = fdopen(2, "a");
}

/* The most frames one animation takes: the node's pixel limit holds them to far fewer. */
#define MAX_FRAMES 65536

typedef struct {
  /* One frame for a still picture. */
  int count;
  const uint8_t** frames;
  /* The stop flag, or NULL. */
  const int32_t* stop;
  int animated, delay;
  int width, height, lossless, method;
  float quality;
  /* Out: a still picture's bytes in writer, an animation's in anim. */
  WebPMemoryWriter writer;
  WebPData anim;
  int error;          /* a WebPEncodingError, -1 for a refused configuration, -2 for the animation encoder's failure */
} Job;

static int Stopped(const Job* job) {
  return job->stop && __atomic_load_n(job->stop, __ATOMIC_RELAXED) != 0;
}

/* libwebp's progress hook: returning 0 ends the encode (VP8_ENC_ERROR_USER_ABORT). */
static int Progress(int percent, const WebPPicture* picture) {
  (void)percent;
  return !Stopped((const Job*)picture->user_data);
}

/* A picture of the job's size, its pixels still to import; the hook sees the job. */
static int InitPicture(Job* job, WebPPicture* pic, int use_argb) {
  if (!WebPPictureInit(pic)) return 0;
  pic->use_argb = use_argb;
  pic->width = job->width;
  pic->height = job->height;
  pic->progress_hook = Progress;
  pic->user_data = job;
  return 1;
}

static int Configure(const Job* job, WebPConfig* config) {
  if (!WebPConfigInit(config)) return 0;
  config->lossless = job->lossless;
  config->quality = job->quality;
  config->method = job->method;
  return WebPValidateConfig(config);
}

static void ExecuteAnimation(Job* job) {
  WebPConfig config;
  WebPAnimEncoderOptions options;
  if (!Configure(job, &config) || !WebPAnimEncoderOptionsInit(&options)) {
    job->error = -1;
    return;
  }
  options.anim_params.loop_count = 0;
  options.anim_params.bgcolor = 0;
  options.minimize_size = 0;
  options.allow_mixed = 0;
  options.kmin = job->lossless ? 9 : 3;
  options.kmax = job->lossless ? 17 : 5;
  WebPAnimEncoder* enc = WebPAnimEncoderNew(job->width, job->height, &options);
  if (!enc) {
    job->error = VP8_ENC_ERROR_OUT_OF_MEMORY;
    return;
  }
  int ok = 1;
  for (int i = 0; ok && i < job->count; i++) {
    WebPPicture pic;
    /* ARGB: the animation encoder takes no other frames. */
    if (Stopped(job) || !InitPicture(job, &pic, 1)) {
      ok = 0;
      break;
    }
    ok = WebPPictureImportRGB(&pic, job->frames[i], job->width * 3) && WebPAnimEncoderAdd(enc, &pic, i * job->delay, &config);
    WebPPictureFree(&pic);
  }
  /* The end of the last frame's duration. */
  ok = ok && WebPAnimEncoderAdd(enc, NULL, job->count * job->delay, NULL);
  if (!ok || !WebPAnimEncoderAssemble(enc, &job->anim)) job->error = -2;
  WebPAnimEncoderDelete(enc);
}

static void Execute(Job* job) {
  WebPConfig config;
  WebPPicture pic;
  WebPMemoryWriterInit(&job->writer);
  WebPDataInit(&job->anim);
  if (job->animated) {
    ExecuteAnimation(job);
    return;
  }
  /* As cwebp: ARGB for lossless, the picture imported straight into YUV for lossy. */
  if (!Configure(job, &config) || !InitPicture(job, &pic, job->lossless)) {
    job->error = -1;
    return;
  }
  pic.writer = WebPMemoryWrite;
  pic.custom_ptr = &job->writer;
  if (!WebPPictureImportRGB(&pic, job->frames[0], job->width * 3)) {
    job->error = pic.error_code ? (int)pic.error_code : (int)VP8_ENC_ERROR_OUT_OF_MEMORY;
    WebPPictureFree(&pic);
    return;
  }
  if (!WebPEncode(&config, &pic)) job->error = pic.error_code ? (int)pic.error_code : -1;
  WebPPictureFree(&pic);
}

static void FreeJob(Job* job) {
  WebPMemoryWriterClear(&job->writer);
  WebPDataClear(&job->anim);
  free(job->frames);
  free(job);
}

/* Runs the job and frees it: its file as a Buffer, or NULL with the error thrown. */
static napi_value Run(napi_env env, Job* job) {
  napi_value result;
  Execute(job);
  const uint8_t* bytes = job->animated ? job->anim.bytes : job->writer.mem;
  size_t size = job->animated ? job->anim.size : job->writer.size;
  if (job->error == 0 && napi_create_buffer_copy(env, size, bytes, NULL, &result) == napi_ok) {
    FreeJob(job);
    return result;
  }
  char text[96];
  if (job->error == 0) snprintf(text, sizeof text, "webp-encoder: out of memory for the file");
  else if (job->error == -1) snprintf(text, sizeof text, "webp-encoder: libwebp refused the configuration");
  else if (job->error == VP8_ENC_ERROR_USER_ABORT || Stopped(job)) snprintf(text, sizeof text, "webp-encoder: stopped");
  else if (job->error == -2) snprintf(text, sizeof text, "webp-encoder: libwebp's animation encoder failed");
  else snprintf(text, sizeof text, "webp-encoder: libwebp failed with error %d", job->error);
  FreeJob(job);
  napi_throw_error(env, NULL, text);
  return NULL;
}

static napi_value Throw(napi_env env, const char* message) {
  napi_throw_range_error(env, NULL, message);
  return NULL;
}

/* width, height, lossless, quality, method from argv[0..4] into job; a message when one is refused. */
static const char* ReadOptions(napi_env env, napi_value* argv, Job* job) {
  uint32_t width, height, method;
  double quality;
  bool lossless;
  if (napi_get_value_uint32(env, argv[0], &width) != napi_ok || napi_get_value_uint32(env, argv[1], &height) != napi_ok ||
      napi_get_value_bool(env, argv[2], &lossless) != napi_ok || napi_get_value_double(env, argv[3], &quality) != napi_ok ||
      napi_get_value_uint32(env, argv[4], &method) != napi_ok) {
    return "webp-encoder: width, height, quality and method are numbers, lossless a boolean";
  }
  if (width < 1 || height < 1 || width > WEBP_MAX_DIMENSION || height > WEBP_MAX_DIMENSION) return "webp-encoder: width and height must be 1-16383";
  if (!(quality >= 0 && quality <= 100) || method > 6) return "webp-encoder: quality must be 0-100 and method 0-6";
  job->width = (int)width;
  job->height = (int)height;
  job->lossless = lossless ? 1 : 0;
  job->quality = (float)quality;
  job->method = (int)method;
  return NULL;
}

/* Takes frame i (a Uint8Array of at least width * height * 3 bytes); a message when it is refused. */
static const char* HoldFrame(napi_env env, napi_value value, Job* job, int i) {
  bool is_typed = false;
  napi_typedarray_type type;
  size_t length;
  void* bytes;
  if (napi_is_typedarray(env, value, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, value, &type, &length, &bytes, NULL, NULL) != napi_ok || type != napi_uint8_array) {
    return "webp-encoder: each picture must be a Uint8Array";
  }
  if ((uint64_t)job->width * (uint64_t)job->height * 3 > length) return "webp-encoder: a picture holds fewer than width * height * 3 bytes";
  job->frames[i] = (const uint8_t*)bytes;
  return NULL;
}

/* Takes the optional stop flag (undefined, or an Int32Array over shared memory); a message when it is refused. */
static const char* HoldStop(napi_env env, napi_value value, Job* job) {
  napi_valuetype kind;
  if (napi_typeof(env, value, &kind) != napi_ok) return "webp-encoder: could not read the stop flag";
  if (kind == napi_undefined) return NULL;
  bool is_typed = false;
  napi_typedarray_type type;
  size_t length;
  void* bytes;
  if (napi_is_typedarray(env, value, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, value, &type, &length, &bytes, NULL, NULL) != napi_ok || type != napi_int32_array || length < 1) {
    return "webp-encoder: the stop flag must be an Int32Array";
  }
  job->stop = (const int32_t*)bytes;
  return NULL;
}

static Job* NewJob(int count) {
  Job* job = (Job*)calloc(1, sizeof(Job));
  if (!job) return NULL;
  job->frames = (const uint8_t**)calloc((size_t)count, sizeof(uint8_t*));
  if (!job->frames) {
    free(job);
    return NULL;
  }
  job->count = count;
  return job;
}

/* Runs the job, or frees it and throws when one of its arguments was refused. */
static napi_value RunUnlessRefused(napi_env env, Job* job, const char* refused) {
  if (refused) {
    FreeJob(job);
    return Throw(env, refused);
  }
  return Run(env, job);
}

static napi_value Encode(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 6) return Throw(env, "webp-encoder: encode(rgb, width, height, lossless, quality, method)");
  Job* job = NewJob(1);
  if (!job) return Throw(env, "webp-encoder: out of memory");
  const char* refused = ReadOptions(env, argv + 1, job);
  if (!refused) refused = HoldFrame(env, argv[0], job, 0);
  if (!refused && argc > 6) refused = HoldStop(env, argv[6], job);
  return RunUnlessRefused(env, job, refused);
}

static napi_value EncodeAnimation(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) return Throw(env, "webp-encoder: encodeAnimation(frames, width, height, delayMs, lossless, quality, method)");
  bool is_array = false;
  uint32_t count = 0, delay = 0;
  if (napi_is_array(env, argv[0], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[0], &count) != napi_ok) {
    return Throw(env, "webp-encoder: frames must be an array");
  }
  if (count < 1 || count > MAX_FRAMES) return Throw(env, "webp-encoder: an animation has 1-65536 frames");
  if (napi_get_value_uint32(env, argv[3], &delay) != napi_ok) return Throw(env, "webp-encoder: delayMs is a number");
  /* libwebp keeps timestamps in an int. */
  if ((uint64_t)count * delay > INT_MAX) return Throw(env, "webp-encoder: the animation is longer than 2^31 - 1 ms");
  Job* job = NewJob((int)count);
  if (!job) return Throw(env, "webp-encoder: out of memory");
  job->animated = 1;
  job->delay = (int)delay;
  napi_value options[5] = {argv[1], argv[2], argv[4], argv[5], argv[6]};
  const char* refused = ReadOptions(env, options, job);
  for (uint32_t i = 0; !refused && i < count; i++) {
    napi_value frame;
    refused = napi_get_element(env, argv[0], i, &frame) != napi_ok ? "webp-encoder: could not read a frame" : HoldFrame(env, frame, job, (int)i);
  }
  if (!refused && argc > 7) refused = HoldStop(env, argv[7], job);
  return RunUnlessRefused(env, job, refused);
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
    {"encodeAnimation", NULL, EncodeAnimation, NULL, NULL, NULL, napi_enumerable, NULL},
    {"version", NULL, Version, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, 3, props) != napi_ok) return NULL;
  return exports;
}
