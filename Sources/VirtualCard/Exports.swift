// The cryptography the virtual cards (and, through them, the gateway) use lives in its own module;
// `Crypto` stays reachable through VirtualCard as it was.
@_exported public import Cryptography
