/* A stand-in libhiprtc for testing rt.Program on HIP without ROCm.
 *
 * Compiled against the hiprtc.h of the pinned HIP 6.2 header set (the only pinned HIP
 * source that carries it) with -Wall -Werror, so each definition is checked against
 * HIPRTC's prototype.  "Compiling" produces the fake HIP's module image ("FAKEHIP", see
 * fake_hip.c), whose functions are add_int and noop.  A source containing "#error" fails
 * with a log; "#warning" leaves a warning in the log; without an --offload-arch option the
 * compile fails (pygraphrt always passes the device's).  A name expression lowers to its
 * name without template arguments ("add_int<int>" -> "add_int").  Written for pygraphrt's
 * tests; it implements only what they call.
 */
#include <hip/hiprtc.h>
#include <hip/hip_version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXEXPR 8
struct _hiprtcProgram {
  char *src, *name, log[1024];
  char *exprs[MAXEXPR], *lowered[MAXEXPR];
  int nexprs, compiled;
};

hiprtcResult hiprtcVersion(int *major, int *minor) {
  if (!major || !minor) return HIPRTC_ERROR_INVALID_INPUT;
  *major = HIP_VERSION_MAJOR;
  *minor = HIP_VERSION_MINOR;
  return HIPRTC_SUCCESS;
}
const char *hiprtcGetErrorString(hiprtcResult result) {
  switch (result) {
    case HIPRTC_SUCCESS: return "HIPRTC_SUCCESS";
    case HIPRTC_ERROR_INVALID_INPUT: return "HIPRTC_ERROR_INVALID_INPUT";
    case HIPRTC_ERROR_INVALID_PROGRAM: return "HIPRTC_ERROR_INVALID_PROGRAM";
    case HIPRTC_ERROR_INVALID_OPTION: return "HIPRTC_ERROR_INVALID_OPTION";
    case HIPRTC_ERROR_COMPILATION: return "HIPRTC_ERROR_COMPILATION";
    case HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID: return "HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    default: return "HIPRTC_ERROR_INTERNAL_ERROR";
  }
}
hiprtcResult hiprtcCreateProgram(hiprtcProgram *prog, const char *src, const char *name, int numHeaders,
                                 const char **headers, const char **includeNames) {
  if (!prog || !src || numHeaders < 0 || (numHeaders && (!headers || !includeNames)))
    return HIPRTC_ERROR_INVALID_INPUT;
  *prog = calloc(1, sizeof(struct _hiprtcProgram));
  (*prog)->src = strdup(src);
  (*prog)->name = strdup(name ? name : "default_program");
  return HIPRTC_SUCCESS;
}
hiprtcResult hiprtcAddNameExpression(hiprtcProgram prog, const char *name_expression) {
  if (!prog || !name_expression) return HIPRTC_ERROR_INVALID_INPUT;
  if (prog->compiled) return HIPRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION;
  if (prog->nexprs == MAXEXPR) return HIPRTC_ERROR_INTERNAL_ERROR;
  char *lowered = strdup(name_expression), *lt = strchr(lowered, '<');
  if (lt) *lt = 0;
  prog->exprs[prog->nexprs] = strdup(name_expression);
  prog->lowered[prog->nexprs++] = lowered;
  return HIPRTC_SUCCESS;
}
hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int numOptions, const char **options) {
  if (!prog || numOptions < 0 || (numOptions && !options)) return HIPRTC_ERROR_INVALID_INPUT;
  int arch = 0;
  for (int i = 0; i < numOptions; i++) arch |= !strncmp(options[i], "--offload-arch=", 15);
  if (!arch) {
    snprintf(prog->log, sizeof prog->log, "%s: error: no --offload-arch given\n", prog->name);
    return HIPRTC_ERROR_INVALID_OPTION;
  }
  if (strstr(prog->src, "#error")) {
    snprintf(prog->log, sizeof prog->log, "%s:1:2: error: fake compile error\n1 error generated.\n", prog->name);
    return HIPRTC_ERROR_COMPILATION;
  }
  if (strstr(prog->src, "#warning"))
    snprintf(prog->log, sizeof prog->log, "%s:1:2: warning: fake warning [-W#warnings]\n", prog->name);
  prog->compiled = 1;
  return HIPRTC_SUCCESS;
}
hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t *logSizeRet) {
  if (!prog || !logSizeRet) return HIPRTC_ERROR_INVALID_INPUT;
  *logSizeRet = strlen(prog->log) + 1;
  return HIPRTC_SUCCESS;
}
hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char *log) {
  if (!prog || !log) return HIPRTC_ERROR_INVALID_INPUT;
  memcpy(log, prog->log, strlen(prog->log) + 1);
  return HIPRTC_SUCCESS;
}
static const char image[] = "FAKEHIP code object";
hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t *codeSizeRet) {
  if (!prog || !codeSizeRet) return HIPRTC_ERROR_INVALID_INPUT;
  if (!prog->compiled) return HIPRTC_ERROR_INVALID_PROGRAM;
  *codeSizeRet = sizeof image;
  return HIPRTC_SUCCESS;
}
hiprtcResult hiprtcGetCode(hiprtcProgram prog, char *code) {
  if (!prog || !code) return HIPRTC_ERROR_INVALID_INPUT;
  if (!prog->compiled) return HIPRTC_ERROR_INVALID_PROGRAM;
  memcpy(code, image, sizeof image);
  return HIPRTC_SUCCESS;
}
hiprtcResult hiprtcGetLoweredName(hiprtcProgram prog, const char *name_expression, const char **lowered_name) {
  if (!prog || !name_expression || !lowered_name) return HIPRTC_ERROR_INVALID_INPUT;
  if (!prog->compiled) return HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION;
  for (int i = 0; i < prog->nexprs; i++)
    if (!strcmp(prog->exprs[i], name_expression)) { *lowered_name = prog->lowered[i]; return HIPRTC_SUCCESS; }
  return HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID;
}
hiprtcResult hiprtcDestroyProgram(hiprtcProgram *prog) {
  if (!prog || !*prog) return HIPRTC_ERROR_INVALID_INPUT;
  for (int i = 0; i < (*prog)->nexprs; i++) { free((*prog)->exprs[i]); free((*prog)->lowered[i]); }
  free((*prog)->src); free((*prog)->name); free(*prog);
  *prog = NULL;
  return HIPRTC_SUCCESS;
}
