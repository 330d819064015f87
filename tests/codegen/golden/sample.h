/* A small header exercising every C construct bindgen handles. Written for pygraphrt's tests. */
#ifndef SAMPLE_H
#define SAMPLE_H
#include <stddef.h>

#define SMP_VERSION 1203
#define SMP_FLAG_A 0x1U
#define SMP_FLAG_B (SMP_FLAG_A << 3)
#define SMP_NEG (-5)
#define SMP_BIG 0xFFFFFFFFFFFFFFFFULL
#define SMP_NAME "sample" "-1"
#define SMP_RATIO 0.5f
#define SMP_HANDLE_NONE ((smpHandle_t)0x2)
#define SMP_ALIAS smpOpen_v2

#ifdef SMP_PER_THREAD
#define smpLaunch smpLaunch_ptsz
#endif

#define SMP_DEPRECATED __attribute__((deprecated("use the other one")))

typedef struct smpHandle_st *smpHandle_t;

enum smpKind {
    smpKindA,
    smpKindB = 4,
    smpKindC,
    smpKindD = smpKindB * 2 + (1 << 4),
    smpKindMax = 0x7fffffff
};

typedef enum { smpModeX = -1, smpModeY = 'y' } smpMode;

typedef void (*smpCallback_t)(void *user, int status);

struct smpInner { unsigned char tag; double value; };

struct smpRecord {
    int id;
    struct smpInner inner;
    union {
        int asInt;
        float asFloat;
    };
    struct {
        short a;
        short b;
    } pair;
    unsigned flagA : 1;
    unsigned flagB : 3;
    int wide : 20;
    char name[SMP_FLAG_B + 8];
    long long matrix[2][3];
    smpCallback_t callback;
    enum smpKind kind;
};

struct __attribute__((aligned(16))) smpAligned { int x; };
struct smpAlignasFirst { _Alignas(8) int a; char b; };
struct smpAlignasLater { int a; _Alignas(16) int b; };

#pragma pack(push, 1)
struct smpPacked { char c; int i; };
#pragma pack(pop)

typedef struct smpRecord smpRecord_t;
typedef struct { int unnamed_field; } smpAnon;

int smpOpen(smpHandle_t *out, const char *name, size_t len);
int smpOpen_v2(smpHandle_t *out, const char *name, size_t len, unsigned flags);
SMP_DEPRECATED int smpOld(void);
int smpLaunch(smpHandle_t h, const smpRecord_t *records, int count, ...);
int smpSetCallback(smpHandle_t h, smpCallback_t cb, void *user);
int smpFill(int values[4]);
static inline int smpHelper(int x) { return x + 1; }
#ifdef SMP_PER_THREAD
int smpLaunch_ptsz(smpHandle_t h, const smpRecord_t *records, int count, ...);
#endif
#define smpOpenLatest SMP_ALIAS

#endif
