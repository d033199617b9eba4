"""Running static graphs: Session, the Program contract, the reference interpreter."""
