// PCSC: see DESIGN.md.
