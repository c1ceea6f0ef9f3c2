// The baseline of the PC/SC benchmark: the plainest SCardTransmit loop, in C. It lives apart from
// tapemu's PC/SC code (module PCSC) and exists only to be measured against.
#ifndef TAPEMU_CPCSCBASELINE_H
#define TAPEMU_CPCSCBASELINE_H

#include <stddef.h>
#include <stdint.h>

/// An established context and a card connected in a reader.
typedef struct tapemu_c_loop tapemu_c_loop;

/// SCardEstablishContext, then SCardConnect (shared, T=0 or T=1) to `reader`. NULL on failure,
/// with the PC/SC return code in `*rv`.
tapemu_c_loop *tapemu_c_loop_connect(const char *reader, long *rv);

/// A loop on a connection someone else made (an `SCARDHANDLE` and the protocol pcscd negotiated,
/// `SCARD_PROTOCOL_T0` or `_T1`): the same pcscd context, the same thread of pcscd serving it.
/// Its close frees the loop only; the connection stays its owner's. NULL when out of memory.
tapemu_c_loop *tapemu_c_loop_attach(intptr_t card, unsigned long protocol);

/// Sends `count` commands, cycling through the `ncommands` commands given, and writes the time
/// of each SCardTransmit in nanoseconds (CLOCK_MONOTONIC) into `nanos`. Returns 0, or the PC/SC
/// return code of the transmit that failed (-1 for a response shorter than SW1 SW2).
long tapemu_c_loop_run(tapemu_c_loop *loop, const uint8_t *const *commands, const size_t *lengths,
                       size_t ncommands, size_t count, uint64_t *nanos);

/// For a loop that connected: SCardDisconnect (leave the card) and SCardReleaseContext. Frees `loop`.
void tapemu_c_loop_close(tapemu_c_loop *loop);

#endif
