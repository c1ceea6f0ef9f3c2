// VirtualCard: see DESIGN.md.
