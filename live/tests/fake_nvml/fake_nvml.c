/* A fake libnvidia-ml for schedlab's tests: the NVML symbols the live NVML backend calls,
 * answering for a few made-up GPUs, so the real backend code (through nvml-wrapper) runs
 * without a GPU or a driver.
 *
 * Control: a text file next to the library, "<path of this .so>.ctl", read again on every
 * event wait and ECC/process query; lines already applied are skipped. One command a line:
 *   devices N            number of GPUs (before nvmlInit_v2; default 2, at most 8)
 *   xid DEV CODE         a critical XID error event on GPU DEV
 *   ecc DEV COUNT        GPU DEV's uncorrected volatile ECC count becomes COUNT
 *   lost DEV             GPU DEV falls off the bus: every later call on it fails GPU_IS_LOST
 *   proc DEV PID MIB     a compute process PID using MIB MiB on GPU DEV
 * Each copy of the .so at its own path has its own globals and its own control file, so
 * tests running in one process do not see each other's GPUs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define OK 0
#define ERR_UNINIT 1
#define ERR_INVALID 2
#define ERR_INSUFFICIENT 7
#define ERR_TIMEOUT 10
#define ERR_LOST 15
#define MAX_DEV 8
#define MAX_PROC 16
#define MAX_EVENTS 64
#define EVENT_XID 8ULL
#define EVENT_DBE 2ULL

typedef struct {
  unsigned index;
  int lost;
  unsigned long long ecc;
  unsigned procs;
  unsigned pid[MAX_PROC];
  unsigned long long mem[MAX_PROC];
} dev_t_;
typedef dev_t_ *nvmlDevice_t;

typedef struct {
  unsigned version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
  unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType, eventData;
  unsigned gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
typedef struct {
  int used;
} event_set_t;
typedef event_set_t *nvmlEventSet_t;

static dev_t_ devs[MAX_DEV];
static unsigned dev_count = 2;
static int initialised = 0;
static long consumed_lines = 0;
static struct {
  unsigned dev;
  unsigned long long type, data;
} queue[MAX_EVENTS];
static unsigned q_head = 0, q_len = 0;
static unsigned long long registered[MAX_DEV];
static event_set_t the_set;
/* The backend waits for events on one thread while it queries on another. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void control_path(char *out, size_t len) {
  Dl_info info;
  if (dladdr((void *)&control_path, &info) && info.dli_fname) {
    snprintf(out, len, "%s.ctl", info.dli_fname);
  } else {
    snprintf(out, len, "fake_nvml.ctl");
  }
}

static void push_event(unsigned dev, unsigned long long type, unsigned long long data) {
  if (q_len < MAX_EVENTS && (registered[dev] & type)) {
    unsigned at = (q_head + q_len) % MAX_EVENTS;
    queue[at].dev = dev;
    queue[at].type = type;
    queue[at].data = data;
    q_len++;
  }
}

/* Applies the control file's lines not applied yet. */
static void read_control_locked(void);
static void read_control(void) {
  pthread_mutex_lock(&mu);
  read_control_locked();
  pthread_mutex_unlock(&mu);
}
static void read_control_locked(void) {
  char path[4096], line[256];
  control_path(path, sizeof path);
  FILE *f = fopen(path, "r");
  if (!f) return;
  long n = 0;
  while (fgets(line, sizeof line, f)) {
    if (n++ < consumed_lines) continue;
    consumed_lines = n;
    unsigned a = 0, c = 0;
    unsigned long long b = 0;
    if (sscanf(line, "devices %u", &a) == 1) {
      if (!initialised && a <= MAX_DEV) dev_count = a;
    } else if (sscanf(line, "xid %u %llu", &a, &b) == 2) {
      if (a < dev_count) push_event(a, EVENT_XID, b);
    } else if (sscanf(line, "ecc %u %llu", &a, &b) == 2) {
      if (a < dev_count) {
        if (b > devs[a].ecc) push_event(a, EVENT_DBE, 0);
        devs[a].ecc = b;
      }
    } else if (sscanf(line, "lost %u", &a) == 1) {
      if (a < dev_count) devs[a].lost = 1;
    } else if (sscanf(line, "proc %u %u %llu", &a, &c, &b) == 3) {
      if (a < dev_count && devs[a].procs < MAX_PROC) {
        devs[a].pid[devs[a].procs] = c;
        devs[a].mem[devs[a].procs] = b;
        devs[a].procs++;
      }
    }
  }
  fclose(f);
}

static int check(nvmlDevice_t d) {
  if (!initialised) return ERR_UNINIT;
  if (d < devs || d >= devs + dev_count) return ERR_INVALID;
  if (d->lost) return ERR_LOST;
  return OK;
}

int nvmlInit_v2(void) {
  if (!initialised) {
    memset(devs, 0, sizeof devs);
    memset(registered, 0, sizeof registered);
    consumed_lines = 0;
    q_head = q_len = 0;
    read_control();
    for (unsigned i = 0; i < MAX_DEV; i++) devs[i].index = i;
  }
  initialised = 1;
  return OK;
}
int nvmlInitWithFlags(unsigned flags) {
  (void)flags;
  return nvmlInit_v2();
}
int nvmlShutdown(void) {
  initialised = 0;
  return OK;
}
const char *nvmlErrorString(int result) {
  (void)result;
  return "fake NVML error";
}
int nvmlSystemGetDriverVersion(char *version, unsigned length) {
  if (!initialised) return ERR_UNINIT;
  snprintf(version, length, "550.54.15");
  return OK;
}
int nvmlDeviceGetCount_v2(unsigned *count) {
  if (!initialised) return ERR_UNINIT;
  *count = dev_count;
  return OK;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device) {
  if (!initialised) return ERR_UNINIT;
  if (index >= dev_count) return ERR_INVALID;
  read_control();
  *device = &devs[index];
  return devs[index].lost ? ERR_LOST : OK;
}
int nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *index) {
  int r = check(d);
  if (r == OK) *index = d->index;
  return r;
}
int nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned length) {
  int r = check(d);
  if (r == OK) snprintf(uuid, length, "GPU-fa4e0000-0000-4000-8000-00000000000%u", d->index);
  return r;
}
int nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned length) {
  int r = check(d);
  if (r == OK) snprintf(name, length, "Fake NVIDIA A100-SXM4-40GB");
  return r;
}
int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *memory) {
  int r = check(d);
  if (r != OK) return r;
  unsigned long long used = 0;
  for (unsigned i = 0; i < d->procs; i++) used += d->mem[i] << 20;
  memory->total = 40ULL << 30;
  memory->reserved = 512ULL << 20;
  memory->used = used;
  memory->free = memory->total - memory->reserved - used;
  return OK;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
  int r = check(d);
  if (r != OK) return r;
  u->gpu = d->procs ? 97 : 0;
  u->memory = d->procs ? 40 : 0;
  return OK;
}
int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *temp) {
  int r = check(d);
  if (r != OK) return r;
  if (sensor != 0) return ERR_INVALID;
  *temp = 30 + d->index;
  return OK;
}
int nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int error_type, int counter_type, unsigned long long *count) {
  int r = check(d);
  if (r != OK) return r;
  read_control();
  (void)counter_type;
  *count = error_type == 1 ? d->ecc : 0; /* 1: uncorrected */
  return OK;
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count, nvmlProcessInfo_t *infos) {
  int r = check(d);
  if (r != OK) return r;
  read_control();
  if (infos == NULL || *count < d->procs) {
    unsigned needed = d->procs;
    *count = needed;
    return needed ? ERR_INSUFFICIENT : OK;
  }
  for (unsigned i = 0; i < d->procs; i++) {
    infos[i].pid = d->pid[i];
    infos[i].usedGpuMemory = d->mem[i] << 20;
    infos[i].gpuInstanceId = 0xFFFFFFFF;
    infos[i].computeInstanceId = 0xFFFFFFFF;
  }
  *count = d->procs;
  return OK;
}
int nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types) {
  int r = check(d);
  if (r == OK) *types = EVENT_XID | EVENT_DBE | 1ULL;
  return r;
}
int nvmlEventSetCreate(nvmlEventSet_t *set) {
  if (!initialised) return ERR_UNINIT;
  the_set.used = 1;
  *set = &the_set;
  return OK;
}
int nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
  int r = check(d);
  if (r != OK) return r;
  if (set != &the_set) return ERR_INVALID;
  registered[d->index] |= types;
  return OK;
}
int nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms) {
  if (!initialised) return ERR_UNINIT;
  if (set != &the_set) return ERR_INVALID;
  for (unsigned waited = 0;; waited += 10) {
    pthread_mutex_lock(&mu);
    read_control_locked();
    if (q_len > 0) {
      data->device = &devs[queue[q_head].dev];
      data->eventType = queue[q_head].type;
      data->eventData = queue[q_head].data;
      data->gpuInstanceId = 0xFFFFFFFF;
      data->computeInstanceId = 0xFFFFFFFF;
      q_head = (q_head + 1) % MAX_EVENTS;
      q_len--;
      pthread_mutex_unlock(&mu);
      return OK;
    }
    pthread_mutex_unlock(&mu);
    if (waited >= timeout_ms) return ERR_TIMEOUT;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}
int nvmlEventSetFree(nvmlEventSet_t set) {
  if (set != &the_set) return ERR_INVALID;
  the_set.used = 0;
  return OK;
}
