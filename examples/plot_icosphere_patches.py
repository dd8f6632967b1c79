"""
Icosahedral patches of the cortical sphere
==========================================

Surface fMRI is resampled to the ico6 template (40,962 vertices per hemisphere) and cut into the
triangular patches of a coarser icosphere (ico2: 320 patches of 153 vertices), the tokens of the surface
vision transformer (SiT). This example builds the icospheres and shows how the patches tile the sphere.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from neurokit.geometry.icosphere import icosphere
from neurokit.geometry.patches import patch_table

verts = icosphere(6).vertices
table = patch_table(2, 6)
print("ico6:", verts.shape[0], "vertices;", "ico2 patches:", table.shape)

# %%
# Colour each ico6 vertex by the ico2 patch it belongs to (first patch that holds it).
owner = np.full(verts.shape[0], -1)
for p in range(table.shape[0] - 1, -1, -1):
    owner[table[p]] = p
rng = np.random.default_rng(0)
colours = rng.permutation(table.shape[0])[owner]
fig = plt.figure(figsize=(6, 6))
ax = fig.add_subplot(projection="3d")
ax.scatter(*verts.T, c=colours, cmap="tab20", s=1)
ax.set_box_aspect((1, 1, 1))
ax.set_axis_off()
ax.set_title("ico2 patches on the ico6 sphere")
