/** Where POSIX shared-memory objects live on Linux: `shm_open("/k")` is the file `/dev/shm/k`. */
export const SHM_DIR = '/dev/shm';
