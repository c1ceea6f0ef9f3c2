#include "CPCSCBaseline.h"

#include <stdlib.h>
#include <time.h>
#include <winscard.h>

struct tapemu_c_loop {
    SCARDCONTEXT context;
    SCARDHANDLE card;
    DWORD protocol;
    int owns_connection;
    BYTE buffer[MAX_BUFFER_SIZE_EXTENDED];
};

tapemu_c_loop *tapemu_c_loop_connect(const char *reader, long *rv) {
    tapemu_c_loop *loop = calloc(1, sizeof *loop);
    if (loop == NULL) { *rv = (long)SCARD_E_NO_MEMORY; return NULL; }
    LONG r = SCardEstablishContext(SCARD_SCOPE_SYSTEM, NULL, NULL, &loop->context);
    if (r != SCARD_S_SUCCESS) { *rv = r; free(loop); return NULL; }
    r = SCardConnect(loop->context, reader, SCARD_SHARE_SHARED, SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1,
                     &loop->card, &loop->protocol);
    if (r != SCARD_S_SUCCESS) { *rv = r; SCardReleaseContext(loop->context); free(loop); return NULL; }
    loop->owns_connection = 1;
    *rv = SCARD_S_SUCCESS;
    return loop;
}

tapemu_c_loop *tapemu_c_loop_attach(intptr_t card, unsigned long protocol) {
    tapemu_c_loop *loop = calloc(1, sizeof *loop);
    if (loop == NULL) return NULL;
    loop->card = (SCARDHANDLE)card;
    loop->protocol = (DWORD)protocol;
    loop->owns_connection = 0;
    return loop;
}

static uint64_t now_nanos(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

long tapemu_c_loop_run(tapemu_c_loop *loop, const uint8_t *const *commands, const size_t *lengths,
                       size_t ncommands, size_t count, uint64_t *nanos) {
    SCARD_IO_REQUEST pci = { loop->protocol, sizeof(SCARD_IO_REQUEST) };
    if (ncommands == 0) return count == 0 ? 0 : -1;
    for (size_t i = 0; i < count; i++) {
        size_t k = i % ncommands;
        DWORD length = sizeof loop->buffer;
        uint64_t start = now_nanos();
        LONG r = SCardTransmit(loop->card, &pci, commands[k], (DWORD)lengths[k], NULL, loop->buffer, &length);
        nanos[i] = now_nanos() - start;
        if (r != SCARD_S_SUCCESS) return r;
        if (length < 2) return -1;
    }
    return 0;
}

void tapemu_c_loop_close(tapemu_c_loop *loop) {
    if (loop == NULL) return;
    if (loop->owns_connection) {
        SCardDisconnect(loop->card, SCARD_LEAVE_CARD);
        SCardReleaseContext(loop->context);
    }
    free(loop);
}
